// The operator table and each operator's shape inference and real-valued scalar semantics.
#include "ir/ops.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <set>

#include "core/error.h"

namespace weft {

std::string TensorType::str() const {
  return fmt::format("{}{}", dtype_name(dtype), shape_str(shape));
}

namespace {

[[noreturn]] void fail(const std::string& message) { throw UserError(message); }

const char* grid_axis_name(int g) { return g == 0 ? "x" : g == 1 ? "y" : "z"; }

// Normalizes attribute `name` (a dim, possibly negative) against `rank`.
int64_t take_dim(Attrs& attrs, const char* name, size_t rank) {
  int64_t d = attrs.get_int(name);
  int64_t r = static_cast<int64_t>(rank);
  if (d < -r || d >= r)
    fail(fmt::format("{}={} is out of range for a tensor of rank {} (valid: {}..{})", name, d,
                     rank, -r, r - 1));
  if (d < 0) d += r;
  attrs.set(name, d);
  return d;
}

void require_same_dtype(const std::vector<TensorType>& in) {
  for (size_t i = 1; i < in.size(); ++i)
    if (in[i].dtype != in[0].dtype)
      fail(fmt::format("operand {} is {} but operand 1 is {}; operands must have the same dtype",
                       i + 1, dtype_name(in[i].dtype), dtype_name(in[0].dtype)));
}

std::vector<TensorType> infer_unary(const std::vector<TensorType>& in, Attrs&,
                                    const InferContext&) {
  return {in[0]};
}

std::vector<TensorType> infer_binary(const std::vector<TensorType>& in, Attrs&,
                                     const InferContext&) {
  require_same_dtype(in);
  const Shape &a = in[0].shape, &b = in[1].shape;
  if (a.size() != b.size())
    fail(fmt::format("operands have ranks {} and {} ({} and {}); elementwise operands need the "
                     "same rank (use reshape to add size-1 dims)",
                     a.size(), b.size(), shape_str(a), shape_str(b)));
  Shape out(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i] && a[i] != 1 && b[i] != 1)
      fail(fmt::format("shapes {} and {} do not broadcast: dim {} is {} vs {} (only size-1 dims "
                       "broadcast)",
                       shape_str(a), shape_str(b), i, a[i], b[i]));
    out[i] = std::max(a[i], b[i]);
  }
  return {TensorType{in[0].dtype, out}};
}

std::vector<TensorType> infer_matmul(const std::vector<TensorType>& in, Attrs&,
                                     const InferContext&) {
  require_same_dtype(in);
  const Shape &a = in[0].shape, &b = in[1].shape;
  if (a.size() < 2 || b.size() < 2 || a.size() != b.size())
    fail(fmt::format("matmul needs two operands of the same rank >= 2, got {} and {}",
                     shape_str(a), shape_str(b)));
  size_t r = a.size();
  if (a[r - 1] != b[r - 2])
    fail(fmt::format("matmul contraction mismatch: {} x {} (last dim of the first operand, {}, "
                     "must equal the second-to-last dim of the second, {})",
                     shape_str(a), shape_str(b), a[r - 1], b[r - 2]));
  Shape out(r);
  for (size_t i = 0; i + 2 < r; ++i) {
    if (a[i] != b[i] && a[i] != 1 && b[i] != 1)
      fail(fmt::format("matmul batch dims do not broadcast: {} x {} at dim {}", shape_str(a),
                       shape_str(b), i));
    out[i] = std::max(a[i], b[i]);
  }
  out[r - 2] = a[r - 2];
  out[r - 1] = b[r - 1];
  return {TensorType{in[0].dtype, out}};
}

std::vector<TensorType> infer_reduction(const std::vector<TensorType>& in, Attrs& attrs,
                                        const InferContext&) {
  Shape s = in[0].shape;
  int64_t d = take_dim(attrs, "dim", s.size());
  int64_t to = attrs.get_int("to");
  if (to < 1 || s[d] % to != 0)
    fail(fmt::format("cannot reduce dim {} of size {} to {}: the result size must divide it", d,
                     s[d], to));
  s[d] = to;
  return {TensorType{in[0].dtype, s}};
}

std::vector<TensorType> infer_reshape(const std::vector<TensorType>& in, Attrs& attrs,
                                      const InferContext&) {
  const auto& shape = attrs.get_list("shape");
  for (int64_t d : shape)
    if (d < 1) fail(fmt::format("reshape to {}: every dim must be >= 1", shape_str(shape)));
  if (numel(shape) != numel(in[0].shape))
    fail(fmt::format("cannot reshape {} ({} elements) to {} ({} elements)",
                     shape_str(in[0].shape), numel(in[0].shape), shape_str(shape), numel(shape)));
  return {TensorType{in[0].dtype, shape}};
}

std::vector<TensorType> infer_concat(const std::vector<TensorType>& in, Attrs& attrs,
                                     const InferContext&) {
  require_same_dtype(in);
  Shape s = in[0].shape;
  int64_t d = take_dim(attrs, "dim", s.size());
  for (size_t i = 1; i < in.size(); ++i) {
    const Shape& t = in[i].shape;
    bool ok = t.size() == s.size();
    for (size_t j = 0; ok && j < t.size(); ++j)
      if (static_cast<int64_t>(j) != d && t[j] != s[j]) ok = false;
    if (!ok)
      fail(fmt::format("concat along dim {}: operand {} has shape {} but operand 1 has {}; all "
                       "other dims must agree",
                       d, i + 1, shape_str(t), shape_str(in[0].shape)));
    s[d] += t[d];
  }
  return {TensorType{in[0].dtype, s}};
}

std::vector<TensorType> infer_split(const std::vector<TensorType>& in, Attrs& attrs,
                                    const InferContext&) {
  Shape s = in[0].shape;
  int64_t d = take_dim(attrs, "dim", s.size());
  int64_t parts = attrs.get_int("parts");
  if (parts < 1 || s[d] % parts != 0)
    fail(fmt::format("cannot split dim {} of size {} into {} equal parts", d, s[d], parts));
  s[d] /= parts;
  return std::vector<TensorType>(parts, TensorType{in[0].dtype, s});
}

std::vector<TensorType> infer_repeat(const std::vector<TensorType>& in, Attrs& attrs,
                                     const InferContext&) {
  Shape s = in[0].shape;
  int64_t d = take_dim(attrs, "dim", s.size());
  int64_t times = attrs.get_int("times");
  if (times < 1) fail(fmt::format("repeat times={} must be >= 1", times));
  s[d] *= times;
  return {TensorType{in[0].dtype, s}};
}

std::vector<TensorType> infer_normalizing(const std::vector<TensorType>& in, Attrs& attrs,
                                          const InferContext&) {
  take_dim(attrs, "dim", in[0].shape.size());
  if (attrs.has("eps") && attrs.get_rational("eps") < Rational(0))
    fail("eps must be >= 0");
  return {in[0]};
}

// Pads a grid map to 3 entries and checks each entry against the grid and the tensor's rank.
std::vector<int64_t> take_grid_map(Attrs& attrs, const char* name, size_t rank,
                                   const InferContext& ctx) {
  std::vector<int64_t> m = attrs.get_list(name);
  if (m.size() > 3) fail(fmt::format("{} has {} entries; a grid has at most 3 dims", name, m.size()));
  m.resize(3, -1);
  std::set<int64_t> used;
  for (int g = 0; g < 3; ++g) {
    int64_t d = m[g];
    if (d == -1) continue;
    if (d < 0 || d >= static_cast<int64_t>(rank))
      fail(fmt::format("{} entry for grid dim {} is {}, not a dim of a rank-{} tensor", name,
                       grid_axis_name(g), d, rank));
    if (ctx.grid[g] == 1)
      fail(fmt::format("grid dim {} has size 1, so its {} entry must be '-' (got {})",
                       grid_axis_name(g), name, d));
    if (!used.insert(d).second)
      fail(fmt::format("{} maps two grid dims to data dim {}", name, d));
  }
  attrs.set(name, m);
  return m;
}

std::vector<TensorType> infer_iter(const std::vector<TensorType>& in, Attrs& attrs,
                                   const InferContext& ctx) {
  Shape s = in[0].shape;
  auto imap = take_grid_map(attrs, "imap", s.size(), ctx);
  for (int g = 0; g < 3; ++g) {
    if (imap[g] < 0) continue;
    if (s[imap[g]] % ctx.grid[g] != 0)
      fail(fmt::format("imap cuts dim {} (size {}) into {} blocks along grid dim {}, which does "
                       "not divide it",
                       imap[g], s[imap[g]], ctx.grid[g], grid_axis_name(g)));
    s[imap[g]] /= ctx.grid[g];
  }
  int64_t f = attrs.get_int("fmap");
  if (f != -1) {
    if (f < 0 || f >= static_cast<int64_t>(s.size()))
      fail(fmt::format("fmap={} is not a dim of a rank-{} tensor", f, s.size()));
    if (s[f] % ctx.loop != 0)
      fail(fmt::format("fmap cuts dim {} (size {} per block) into {} iterations, which does not "
                       "divide it",
                       f, s[f], ctx.loop));
    s[f] /= ctx.loop;
  }
  return {TensorType{in[0].dtype, s}};
}

std::vector<TensorType> infer_accum_concat(const std::vector<TensorType>& in, Attrs& attrs,
                                           const InferContext& ctx) {
  Shape s = in[0].shape;
  int64_t d = take_dim(attrs, "dim", s.size());
  s[d] *= ctx.loop;
  return {TensorType{in[0].dtype, s}};
}

std::vector<TensorType> infer_save(const std::vector<TensorType>& in, Attrs& attrs,
                                   const InferContext& ctx) {
  Shape s = in[0].shape;
  auto omap = take_grid_map(attrs, "omap", s.size(), ctx);
  for (int g = 0; g < 3; ++g) {
    if (ctx.grid[g] > 1 && omap[g] < 0)
      fail(fmt::format("omap entry for grid dim {} (size {}) is '-', but blocks along it must "
                       "write disjoint parts of the output: map it to a data dim",
                       grid_axis_name(g), ctx.grid[g]));
    if (omap[g] >= 0) s[omap[g]] *= ctx.grid[g];
  }
  return {TensorType{in[0].dtype, s}};
}

double gelu(double x, const Attrs&) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

constexpr uint8_t kAll = kAtKernel | kAtBlock | kAtThread;
constexpr uint8_t kKB = kAtKernel | kAtBlock;

std::vector<OpInfo> make_table() {
  using K = OpKind;
  using C = OpClass;
  const AttrSpec dim{"dim", AttrKind::integer, true, int64_t{0}};
  const AttrSpec dim_last{"dim", AttrKind::integer, false, int64_t{-1}};
  const AttrSpec to{"to", AttrKind::integer, false, int64_t{1}};
  // clang-format off
  std::vector<OpInfo> t = {
    {K::exp,  "exp",  C::unary, 1, 1, kAll, true,  {}, infer_unary,
     [](double x, const Attrs&) { return std::exp(x); }, nullptr, "e^x"},
    {K::sqr,  "sqr",  C::unary, 1, 1, kAll, true,  {}, infer_unary,
     [](double x, const Attrs&) { return x * x; }, nullptr, "x^2"},
    {K::sqrt, "sqrt", C::unary, 1, 1, kAll, false, {}, infer_unary,
     [](double x, const Attrs&) { return std::sqrt(x); }, nullptr, "square root"},
    {K::silu, "silu", C::unary, 1, 1, kAll, false, {}, infer_unary,
     [](double x, const Attrs&) { return x / (1.0 + std::exp(-x)); }, nullptr, "x * sigmoid(x)"},
    {K::gelu, "gelu", C::unary, 1, 1, kAll, false, {}, infer_unary, gelu, nullptr,
     "0.5 x (1 + erf(x / sqrt 2)) (exact, not the tanh approximation)"},
    {K::relu, "relu", C::unary, 1, 1, kAll, false, {}, infer_unary,
     [](double x, const Attrs&) { return x > 0 ? x : 0.0; }, nullptr, "max(x, 0)"},
    {K::scale, "scale", C::unary, 1, 1, kAll, true,
     {{"factor", AttrKind::rational, true, Rational(1)}}, infer_unary,
     [](double x, const Attrs& a) { return x * a.get_rational("factor").to_double(); }, nullptr,
     "x * factor, factor a rational constant"},
    {K::shift, "shift", C::unary, 1, 1, kAll, true,
     {{"offset", AttrKind::rational, true, Rational(0)}}, infer_unary,
     [](double x, const Attrs& a) { return x + a.get_rational("offset").to_double(); }, nullptr,
     "x + offset, offset a rational constant"},
    {K::add, "add", C::binary, 2, 2, kAll, true, {}, infer_binary, nullptr,
     [](double a, double b) { return a + b; }, "a + b, size-1 dims broadcast"},
    {K::sub, "sub", C::binary, 2, 2, kAll, true, {}, infer_binary, nullptr,
     [](double a, double b) { return a - b; }, "a - b, size-1 dims broadcast"},
    {K::mul, "mul", C::binary, 2, 2, kAll, true, {}, infer_binary, nullptr,
     [](double a, double b) { return a * b; }, "a * b, size-1 dims broadcast"},
    {K::div, "div", C::binary, 2, 2, kAll, true, {}, infer_binary, nullptr,
     [](double a, double b) { return a / b; }, "a / b, size-1 dims broadcast"},
    {K::matmul, "matmul", C::matmul, 2, 2, kKB, true, {}, infer_matmul, nullptr, nullptr,
     "[..., m, k] x [..., k, n] -> [..., m, n], size-1 batch dims broadcast"},
    {K::sum,  "sum",  C::reduction, 1, 1, kKB, true,  {dim, to}, infer_reduction, nullptr, nullptr,
     "sum over dim, to size `to`: element g sums elements g, g + to, g + 2 to, ... (per-block tiles laid side by side)"},
    {K::mean, "mean", C::reduction, 1, 1, kKB, true,  {dim, to}, infer_reduction, nullptr, nullptr,
     "mean over dim, to size `to`: element g averages elements g, g + to, g + 2 to, ..."},
    {K::max,  "max",  C::reduction, 1, 1, kKB, false, {dim, to}, infer_reduction, nullptr, nullptr,
     "maximum over dim, to size `to`: element g is the max of elements g, g + to, g + 2 to, ..."},
    {K::reshape, "reshape", C::movement, 1, 1, kKB, true,
     {{"shape", AttrKind::int_list, true, std::vector<int64_t>{}}}, infer_reshape, nullptr, nullptr,
     "same elements in row-major order, new shape"},
    {K::concat, "concat", C::movement, 2, -1, kKB, true, {dim}, infer_concat, nullptr, nullptr,
     "operands joined along dim"},
    {K::split, "split", C::movement, 1, 1, kKB, true,
     {dim, {"parts", AttrKind::integer, true, int64_t{2}}}, infer_split, nullptr, nullptr,
     "cut along dim into `parts` equal consecutive pieces (one result each)"},
    {K::repeat, "repeat", C::movement, 1, 1, kKB, true,
     {dim, {"times", AttrKind::integer, true, int64_t{1}}}, infer_repeat, nullptr, nullptr,
     "the whole tensor tiled `times` times along dim (like concat of copies)"},
    {K::rms_norm, "rms_norm", C::composite, 1, 1, kAtKernel, false,
     {dim_last, {"eps", AttrKind::rational, false, Rational(0)}}, infer_normalizing, nullptr,
     nullptr, "x / sqrt(mean(x^2, dim) + eps)"},
    {K::softmax, "softmax", C::composite, 1, 1, kAtKernel, true, {dim_last}, infer_normalizing,
     nullptr, nullptr, "exp(x) / sum(exp(x), dim) (no max subtraction: stays in the Lax fragment)"},
    {K::iter, "iter", C::structure, 1, 1, kAtBlock, true,
     {{"imap", AttrKind::dim_map, false, std::vector<int64_t>{-1, -1, -1}},
      {"fmap", AttrKind::opt_dim, false, int64_t{-1}}}, infer_iter, nullptr, nullptr,
     "input iterator: the block's slice (imap) and the iteration's chunk (fmap) of a kernel input"},
    {K::accum_sum, "accum_sum", C::structure, 1, 1, kAtBlock, true, {}, infer_unary, nullptr,
     nullptr, "for-loop accumulator: sum over iterations"},
    {K::accum_max, "accum_max", C::structure, 1, 1, kAtBlock, false, {}, infer_unary, nullptr,
     nullptr, "for-loop accumulator: elementwise maximum over iterations"},
    {K::accum_concat, "accum_concat", C::structure, 1, 1, kAtBlock, true, {dim},
     infer_accum_concat, nullptr, nullptr,
     "for-loop accumulator: iterations' tiles concatenated along dim"},
    {K::save, "save", C::structure, 1, 1, kAtBlock, true,
     {{"omap", AttrKind::dim_map, false, std::vector<int64_t>{-1, -1, -1}}}, infer_save, nullptr,
     nullptr, "output saver: blocks' tiles placed along the data dims of omap"},
    {K::kernel, "kernel", C::hierarchy, 1, -1, kAtKernel, true, {}, nullptr, nullptr, nullptr,
     "graph-defined kernel operator; its body is a block graph"},
    {K::thread, "thread", C::hierarchy, 1, -1, kAtBlock, true, {}, nullptr, nullptr, nullptr,
     "fused elementwise chain kept in registers; its body is a thread graph"},
  };
  // clang-format on
  for (size_t i = 0; i < t.size(); ++i)
    WEFT_CHECK(static_cast<size_t>(t[i].kind) == i, "op table out of order at {}", t[i].name);
  WEFT_CHECK(static_cast<int>(t.size()) == kNumOpKinds, "op table incomplete");
  return t;
}

}  // namespace

const std::vector<OpInfo>& all_ops() {
  static const std::vector<OpInfo> table = make_table();
  return table;
}

const OpInfo& op_info(OpKind kind) { return all_ops()[static_cast<size_t>(kind)]; }

std::optional<OpKind> op_by_name(std::string_view name) {
  static const std::map<std::string, OpKind, std::less<>> by_name = [] {
    std::map<std::string, OpKind, std::less<>> m;
    for (const OpInfo& info : all_ops()) m.emplace(info.name, info.kind);
    return m;
  }();
  auto it = by_name.find(name);
  if (it == by_name.end()) return std::nullopt;
  return it->second;
}

static bool kind_matches(AttrKind kind, const AttrValue& v) {
  switch (kind) {
    case AttrKind::integer:
    case AttrKind::opt_dim: return std::holds_alternative<int64_t>(v);
    case AttrKind::rational: return std::holds_alternative<Rational>(v);
    case AttrKind::int_list:
    case AttrKind::dim_map: return std::holds_alternative<std::vector<int64_t>>(v);
  }
  return false;
}

void complete_attrs(const OpInfo& info, Attrs& attrs) {
  for (const auto& [name, value] : attrs.entries()) {
    const AttrSpec* spec = nullptr;
    for (const AttrSpec& s : info.attrs)
      if (name == s.name) spec = &s;
    if (!spec) {
      std::string known;
      for (const AttrSpec& s : info.attrs) known += (known.empty() ? "" : ", ") + std::string(s.name);
      fail(fmt::format("'{}' has no attribute '{}'{}", info.name, name,
                       known.empty() ? std::string(" (it takes none)")
                                     : fmt::format(" (it takes: {})", known)));
    }
    if (!kind_matches(spec->kind, value)) {
      // Integers are rationals too.
      if (spec->kind == AttrKind::rational && std::holds_alternative<int64_t>(value)) continue;
      fail(fmt::format("attribute '{}' of '{}' has the wrong kind of value", name, info.name));
    }
  }
  for (const AttrSpec& s : info.attrs) {
    if (attrs.has(s.name)) {
      if (s.kind == AttrKind::rational && std::holds_alternative<int64_t>(attrs.entries().at(s.name)))
        attrs.set(s.name, Rational(attrs.get_int(s.name)));
      continue;
    }
    if (s.required) fail(fmt::format("'{}' needs the attribute '{}'", info.name, s.name));
    attrs.set(s.name, s.default_value);
  }
}

}  // namespace weft
