// The operator table: one row per operator with all its properties, and the shape inference and
// real-valued scalar semantics the rows point at.
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

// The model-only rows, in kind order (ops_model.cpp).
std::vector<OpInfo> model_op_rows();

namespace {

[[noreturn]] void fail(const std::string& message) {
  throw UserError(message);
}

const char* grid_axis_name(int g) {
  return g == 0 ? "x" : g == 1 ? "y" : "z";
}

// Normalizes attribute `name` (a dim, possibly negative) against `rank`.
int64_t take_dim(Attrs& attrs, const char* name, size_t rank) {
  int64_t d = attrs.get_int(name);
  int64_t r = static_cast<int64_t>(rank);
  if (d < -r || d >= r)
    fail(fmt::format("{}={} is out of range for a tensor of rank {} (valid: {}..{})", name, d, rank,
                     -r, r - 1));
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
    fail(
        fmt::format("operands have ranks {} and {} ({} and {}); elementwise operands need the "
                    "same rank (use reshape to add size-1 dims)",
                    a.size(), b.size(), shape_str(a), shape_str(b)));
  Shape out(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i] && a[i] != 1 && b[i] != 1)
      fail(
          fmt::format("shapes {} and {} do not broadcast: dim {} is {} vs {} (only size-1 dims "
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
    fail(fmt::format("matmul needs two operands of the same rank >= 2, got {} and {}", shape_str(a),
                     shape_str(b)));
  size_t r = a.size();
  if (a[r - 1] != b[r - 2])
    fail(
        fmt::format("matmul contraction mismatch: {} x {} (last dim of the first operand, {}, "
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
    fail(fmt::format("cannot reshape {} ({} elements) to {} ({} elements)", shape_str(in[0].shape),
                     numel(in[0].shape), shape_str(shape), numel(shape)));
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
      fail(
          fmt::format("concat along dim {}: operand {} has shape {} but operand 1 has {}; all "
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
  if (attrs.has("eps") && attrs.get_rational("eps") < Rational(0)) fail("eps must be >= 0");
  return {in[0]};
}

// Pads a grid map to 3 entries and checks each entry against the grid and the tensor's rank.
std::vector<int64_t> take_grid_map(Attrs& attrs, const char* name, size_t rank,
                                   const InferContext& ctx) {
  std::vector<int64_t> m = attrs.get_list(name);
  if (m.size() > 3)
    fail(fmt::format("{} has {} entries; a grid has at most 3 dims", name, m.size()));
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
    if (!used.insert(d).second) fail(fmt::format("{} maps two grid dims to data dim {}", name, d));
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
      fail(
          fmt::format("imap cuts dim {} (size {}) into {} blocks along grid dim {}, which does "
                      "not divide it",
                      imap[g], s[imap[g]], ctx.grid[g], grid_axis_name(g)));
    s[imap[g]] /= ctx.grid[g];
  }
  int64_t f = attrs.get_int("fmap");
  if (f != -1) {
    if (f < 0 || f >= static_cast<int64_t>(s.size()))
      fail(fmt::format("fmap={} is not a dim of a rank-{} tensor", f, s.size()));
    if (s[f] % ctx.loop != 0)
      fail(
          fmt::format("fmap cuts dim {} (size {} per block) into {} iterations, which does not "
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
      fail(
          fmt::format("omap entry for grid dim {} (size {}) is '-', but blocks along it must "
                      "write disjoint parts of the output: map it to a data dim",
                      grid_axis_name(g), ctx.grid[g]));
    if (omap[g] >= 0) s[omap[g]] *= ctx.grid[g];
  }
  return {TensorType{in[0].dtype, s}};
}

// Reads a row's formula text (ops.h); a mistake in it is a bug in the table.
class FormulaReader {
 public:
  FormulaReader(const char* text, const std::vector<AttrSpec>& attrs) : s_(text), attrs_(attrs) {}

  Formula read_all() {
    skip();
    WEFT_CHECK(pos_ < s_.size() && s_[pos_] == '(', "formula '{}' applies no operation", s_);
    read_operation();
    skip();
    WEFT_CHECK(pos_ == s_.size(), "formula '{}': text after the end", s_);
    WEFT_CHECK(f_.nodes.size() <= Formula::kMaxNodes, "formula '{}' is too long", s_);
    return std::move(f_);
  }

 private:
  void skip() {
    while (pos_ < s_.size() && s_[pos_] == ' ') ++pos_;
  }
  std::string_view word() {
    skip();
    size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] != ' ' && s_[pos_] != '(' && s_[pos_] != ')') ++pos_;
    return s_.substr(start, pos_ - start);
  }
  // "(op F F)" or "(exp F)", the '(' next; returns the node's index.
  int8_t read_operation() {
    ++pos_;
    static constexpr std::pair<const char*, FormulaOp> kHeads[] = {{"add", FormulaOp::add},
                                                                   {"sub", FormulaOp::sub},
                                                                   {"mul", FormulaOp::mul},
                                                                   {"div", FormulaOp::div},
                                                                   {"exp", FormulaOp::exp}};
    std::string_view head = word();
    FormulaNode n;
    bool known = false;
    for (const auto& [name, op] : kHeads)
      if (head == name) n.op = op, known = true;
    WEFT_CHECK(known, "formula '{}': unknown function '{}'", s_, head);
    n.a = read_operand(n);
    if (n.op != FormulaOp::exp) n.b = read_operand(n);
    skip();
    WEFT_CHECK(pos_ < s_.size() && s_[pos_] == ')', "formula '{}': expected ')'", s_);
    ++pos_;
    f_.nodes.push_back(n);
    return static_cast<int8_t>(f_.nodes.size() - 1);
  }
  int8_t read_operand(FormulaNode& user) {
    skip();
    WEFT_CHECK(pos_ < s_.size(), "formula '{}' ends early", s_);
    if (s_[pos_] == '(') return read_operation();
    std::string_view w = word();
    if (w == "x") return FormulaNode::kX;
    if (w == "y") return FormulaNode::kY;
    for (const AttrSpec& a : attrs_)
      if (w == a.name && a.kind == AttrKind::rational) {
        user.attribute = a.name;
        return FormulaNode::kAttribute;
      }
    std::optional<Rational> r = Rational::parse(w);
    WEFT_CHECK(r.has_value(), "formula '{}': '{}' is not x, y, a rational attribute or a number",
               s_, w);
    WEFT_CHECK(user.a != FormulaNode::kLiteral, "formula '{}': two numbers in one operation", s_);
    user.literal = *r;
    return FormulaNode::kLiteral;
  }

  std::string_view s_;
  const std::vector<AttrSpec>& attrs_;
  size_t pos_ = 0;
  Formula f_;
};

double gelu(double x, double, const Attrs&) {
  return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}

// Kernel-level rows but `kernel` are model-level too: a model function calls them.
constexpr uint8_t kAll = kAtKernel | kAtBlock | kAtThread | kAtModel;
constexpr uint8_t kKB = kAtKernel | kAtBlock | kAtModel;
constexpr uint8_t kK = kAtKernel | kAtModel;

// A model-only row: the model layer alone reads it, for its form (name, arity, attributes) and
// documentation; its fusion pattern and cost class say what it does, though no fuser or cost
// model meets it.
void check_model_row(const OpInfo& op) {
  WEFT_CHECK(op.levels == kAtModel, "model-only '{}' must have the model level alone", op.name);
  WEFT_CHECK(op.min_inputs == op.max_inputs, "model-only '{}' takes a fixed number of operands",
             op.name);
  WEFT_CHECK(!op.infer && !op.real && !op.lax_formula && !op.code.cpu && !op.code.cuda &&
                 op.symbolic == Symbolic::none && !op.commutative && op.homogeneous == 0 &&
                 !op.same_operands_redundant,
             "model-only '{}' has µGraph semantics", op.name);
  WEFT_CHECK(op.fusion == FusionPattern::injective || op.fusion == FusionPattern::opaque,
             "model-only '{}' is injective or opaque", op.name);
  WEFT_CHECK((op.fusion == FusionPattern::injective) == (op.cost == CostClass::data_movement),
             "model-only '{}': the injective ones and only they move data", op.name);
  WEFT_CHECK(op.cost == CostClass::data_movement || op.cost == CostClass::per_operand_element,
             "model-only '{}' is priced per operand element or as data movement", op.name);
}

// Checks what the layers rely on, and fills in the derived fields.
void complete_row(OpInfo& op) {
  op.op_class = class_of(op.kind);
  if (op.op_class == OpClass::model) return check_model_row(op);
  WEFT_CHECK(op.levels & kAtUGraph, "'{}' has no µGraph level", op.name);
  WEFT_CHECK(!(op.levels & kAtModel) || ((op.levels & kAtKernel) && op.kind != OpKind::kernel),
             "'{}': a model function calls kernel-level operators only (not kernel)", op.name);
  WEFT_CHECK(op.symbolic != Symbolic::none, "'{}' is a µGraph operator without semantics", op.name);
  const bool elementwise = is_elementwise(op.kind);
  int rational_attrs = 0;
  for (const AttrSpec& a : op.attrs) rational_attrs += a.kind == AttrKind::rational;
  WEFT_CHECK(rational_attrs <= 1, "'{}' has more than one rational attribute", op.name);
  WEFT_CHECK(op.max_inputs < 0 || op.homogeneous < (1u << op.max_inputs),
             "'{}' is homogeneous in an operand it does not have", op.name);
  WEFT_CHECK(elementwise == (op.symbolic == Symbolic::elementwise),
             "'{}': elementwise operators and only they have elementwise symbolic semantics",
             op.name);
  WEFT_CHECK(op.symbolic == Symbolic::expansion || !op.composite_lax,
             "'{}' is not a composite but declares composite_lax", op.name);
  switch (op.symbolic) {
    case Symbolic::elementwise:
      break;  // below, from its formula
    case Symbolic::max:
      op.lax = false;
      break;
    case Symbolic::expansion:
      op.lax = op.composite_lax;
      break;
    case Symbolic::contraction:
    case Symbolic::sum:
    case Symbolic::mean:
    case Symbolic::select:
    case Symbolic::join:
    case Symbolic::body:
      op.lax = true;
      break;
    case Symbolic::none:
      WEFT_FAIL("'{}': µGraph rows have semantics (checked above)", op.name);
  }
  if (!elementwise) {
    WEFT_CHECK(!op.real && !op.lax_formula && !op.code.cpu && !op.code.cuda,
               "'{}' is not elementwise but has scalar semantics or code", op.name);
    return;
  }
  WEFT_CHECK(op.real && op.code.cpu && op.code.cuda, "'{}' lacks real semantics or code", op.name);
  if (op.lax_formula) op.formula = FormulaReader(op.lax_formula, op.attrs).read_all();
  op.lax = !op.formula.empty();
  // The verifier's uninterpreted functions take one argument.
  WEFT_CHECK(op.max_inputs == 1 || op.lax, "binary operator '{}' needs a Lax formula", op.name);
  for (const FormulaNode& n : op.formula.nodes)
    WEFT_CHECK(op.max_inputs == 2 || (n.a != FormulaNode::kY && n.b != FormulaNode::kY),
               "unary operator '{}' has a formula over y", op.name);
}

std::vector<OpInfo> make_table() {
  using K = OpKind;
  using S = Symbolic;
  using F = FusionPattern;
  using Cost = CostClass;
  const AttrSpec dim{"dim", AttrKind::integer, true, int64_t{0}};
  const AttrSpec dim_last{"dim", AttrKind::integer, false, int64_t{-1}};
  const AttrSpec to{"to", AttrKind::integer, false, int64_t{1}};
  // clang-format off
  std::vector<OpInfo> t = {
    {.kind = K::exp, .name = "exp", .min_inputs = 1, .max_inputs = 1, .levels = kAll,
     .infer = infer_unary, .real = [](double x, double, const Attrs&) { return std::exp(x); },
     .lax_formula = "(exp x)", .fusion = F::elementwise,
     .code = {"std::exp({0})", "expf({0})"}, .cost = Cost::per_result_element,
     .slots = {.fp32 = 1, .sfu = 1},  // ex2 on the SFU after a scale by log2(e)
     .doc = "e^x"},
    {.kind = K::sqr, .name = "sqr", .min_inputs = 1, .max_inputs = 1, .levels = kAll,
     .infer = infer_unary, .real = [](double x, double, const Attrs&) { return x * x; },
     .lax_formula = "(mul x x)", .fusion = F::elementwise,
     .code = {"({0} * {0})", "({0} * {0})"}, .cost = Cost::per_result_element,
     .slots = {.fp32 = 1}, .doc = "x^2"},
    {.kind = K::sqrt, .name = "sqrt", .min_inputs = 1, .max_inputs = 1, .levels = kAll,
     .infer = infer_unary, .real = [](double x, double, const Attrs&) { return std::sqrt(x); },
     .fusion = F::elementwise, .code = {"std::sqrt({0})", "sqrtf({0})"},
     .cost = Cost::per_result_element, .slots = {.sfu = 1},  // MUFU.SQRT
     .doc = "square root"},
    {.kind = K::silu, .name = "silu", .min_inputs = 1, .max_inputs = 1, .levels = kAll,
     .infer = infer_unary,
     .real = [](double x, double, const Attrs&) { return x / (1.0 + std::exp(-x)); },
     .fusion = F::elementwise, .code = {"weft_silu({0})", "weft_silu({0})"},
     .cost = Cost::per_result_element,
     .slots = {.fp32 = 3, .sfu = 2},  // exp(-x), 1 + ., reciprocal, x * .
     .doc = "x * sigmoid(x)"},
    {.kind = K::gelu, .name = "gelu", .min_inputs = 1, .max_inputs = 1, .levels = kAll,
     .infer = infer_unary, .real = gelu, .fusion = F::elementwise,
     .code = {"weft_gelu({0})", "weft_gelu({0})"}, .cost = Cost::per_result_element,
     .slots = {.fp32 = 24},  // erf by a ~20-term polynomial, 3 more ops
     .doc = "0.5 x (1 + erf(x / sqrt 2)) (exact, not the tanh approximation)"},
    {.kind = K::relu, .name = "relu", .min_inputs = 1, .max_inputs = 1, .levels = kAll,
     .infer = infer_unary,
     .real = [](double x, double, const Attrs&) { return x > 0 ? x : 0.0; },
     .fusion = F::elementwise, .code = {"std::max({0}, 0.0f)", "fmaxf({0}, 0.0f)"},
     .cost = Cost::per_result_element, .slots = {.fp32 = 1}, .doc = "max(x, 0)"},
    {.kind = K::scale, .name = "scale", .min_inputs = 1, .max_inputs = 1, .levels = kAll,
     .attrs = {{"factor", AttrKind::rational, true, Rational(1)}}, .infer = infer_unary,
     .real = [](double x, double, const Attrs& a) {
       return x * a.get_rational("factor").to_double();
     },
     .lax_formula = "(mul x factor)", .homogeneous = 0b1, .fusion = F::elementwise,
     .code = {"({0} * {2})", "({0} * {2})"}, .cost = Cost::per_result_element,
     .slots = {.fp32 = 1}, .doc = "x * factor, factor a rational constant"},
    {.kind = K::shift, .name = "shift", .min_inputs = 1, .max_inputs = 1, .levels = kAll,
     .attrs = {{"offset", AttrKind::rational, true, Rational(0)}}, .infer = infer_unary,
     .real = [](double x, double, const Attrs& a) {
       return x + a.get_rational("offset").to_double();
     },
     .lax_formula = "(add x offset)", .fusion = F::elementwise,
     .code = {"({0} + {2})", "({0} + {2})"}, .cost = Cost::per_result_element,
     .slots = {.fp32 = 1}, .doc = "x + offset, offset a rational constant"},
    {.kind = K::add, .name = "add", .min_inputs = 2, .max_inputs = 2, .levels = kAll,
     .infer = infer_binary, .real = [](double a, double b, const Attrs&) { return a + b; },
     .lax_formula = "(add x y)", .commutative = true, .fusion = F::broadcast,
     .code = {"({0} + {1})", "({0} + {1})"}, .cost = Cost::per_result_element,
     .slots = {.fp32 = 1}, .doc = "a + b, size-1 dims broadcast"},
    {.kind = K::sub, .name = "sub", .min_inputs = 2, .max_inputs = 2, .levels = kAll,
     .infer = infer_binary, .real = [](double a, double b, const Attrs&) { return a - b; },
     .lax_formula = "(sub x y)", .same_operands_redundant = true,  // 0
     .fusion = F::broadcast, .code = {"({0} - {1})", "({0} - {1})"},
     .cost = Cost::per_result_element, .slots = {.fp32 = 1},
     .doc = "a - b, size-1 dims broadcast"},
    {.kind = K::mul, .name = "mul", .min_inputs = 2, .max_inputs = 2, .levels = kAll,
     .infer = infer_binary, .real = [](double a, double b, const Attrs&) { return a * b; },
     .lax_formula = "(mul x y)", .commutative = true, .homogeneous = 0b11,
     .same_operands_redundant = true,  // sqr
     .fusion = F::broadcast, .code = {"({0} * {1})", "({0} * {1})"},
     .cost = Cost::per_result_element, .slots = {.fp32 = 1},
     .doc = "a * b, size-1 dims broadcast"},
    {.kind = K::div, .name = "div", .min_inputs = 2, .max_inputs = 2, .levels = kAll,
     .infer = infer_binary, .real = [](double a, double b, const Attrs&) { return a / b; },
     .lax_formula = "(div x y)", .homogeneous = 0b1,
     .same_operands_redundant = true,  // 1
     .fusion = F::broadcast, .code = {"({0} / {1})", "({0} / {1})"},
     .cost = Cost::per_result_element,
     .slots = {.fp32 = 1, .sfu = 1},  // reciprocal on the SFU, then a multiply
     .doc = "a / b, size-1 dims broadcast"},
    {.kind = K::matmul, .name = "matmul", .min_inputs = 2, .max_inputs = 2, .levels = kKB,
     .infer = infer_matmul, .symbolic = S::contraction, .homogeneous = 0b11,
     .fusion = F::out_elementwise_fusable, .cost = Cost::contraction,
     .doc = "[..., m, k] x [..., k, n] -> [..., m, n], size-1 batch dims broadcast"},
    {.kind = K::sum, .name = "sum", .min_inputs = 1, .max_inputs = 1, .levels = kKB,
     .attrs = {dim, to}, .infer = infer_reduction, .symbolic = S::sum,
     .homogeneous = 0b1, .fusion = F::reduction, .cost = Cost::per_operand_element,
     .slots = {.fp32 = 1},
     .doc = "sum over dim, to size `to`: element g sums elements g, g + to, g + 2 to, ... (per-block tiles laid side by side)"},
    {.kind = K::mean, .name = "mean", .min_inputs = 1, .max_inputs = 1, .levels = kKB,
     .attrs = {dim, to}, .infer = infer_reduction, .symbolic = S::mean,
     .homogeneous = 0b1, .fusion = F::reduction, .cost = Cost::per_operand_element,
     .slots = {.fp32 = 1},
     .doc = "mean over dim, to size `to`: element g averages elements g, g + to, g + 2 to, ..."},
    {.kind = K::max, .name = "max", .min_inputs = 1, .max_inputs = 1, .levels = kKB,
     .attrs = {dim, to}, .infer = infer_reduction, .symbolic = S::max, .fusion = F::reduction,
     .cost = Cost::per_operand_element, .slots = {.fp32 = 1},
     .doc = "maximum over dim, to size `to`: element g is the max of elements g, g + to, g + 2 to, ..."},
    {.kind = K::reshape, .name = "reshape", .min_inputs = 1, .max_inputs = 1, .levels = kKB,
     .attrs = {{"shape", AttrKind::int_list, true, std::vector<int64_t>{}}},
     .infer = infer_reshape, .symbolic = S::select, .homogeneous = 0b1,
     .fusion = F::injective, .doc = "same elements in row-major order, new shape"},
    {.kind = K::concat, .name = "concat", .min_inputs = 2, .max_inputs = -1, .levels = kKB,
     .attrs = {dim}, .infer = infer_concat, .symbolic = S::join,
     .fusion = F::injective, .doc = "operands joined along dim"},
    {.kind = K::split, .name = "split", .min_inputs = 1, .max_inputs = 1, .levels = kKB,
     .attrs = {dim, {"parts", AttrKind::integer, true, int64_t{2}}}, .infer = infer_split,
     .symbolic = S::select, .homogeneous = 0b1, .fusion = F::injective,
     .doc = "cut along dim into `parts` equal consecutive pieces (one result each)"},
    {.kind = K::repeat, .name = "repeat", .min_inputs = 1, .max_inputs = 1, .levels = kKB,
     .attrs = {dim, {"times", AttrKind::integer, true, int64_t{1}}}, .infer = infer_repeat,
     .symbolic = S::select, .homogeneous = 0b1, .fusion = F::injective,
     .doc = "the whole tensor tiled `times` times along dim (like concat of copies)"},
    {.kind = K::rms_norm, .name = "rms_norm", .min_inputs = 1, .max_inputs = 1,
     .levels = kK, .attrs = {dim_last, {"eps", AttrKind::rational, false, Rational(0)}},
     .infer = infer_normalizing, .symbolic = S::expansion, .homogeneous = 0,
     .fusion = F::opaque, .cost = Cost::per_operand_element,
     .slots = {.fp32 = 3},  // square, sum, multiply by the row's reciprocal root (once per row)
     .doc = "x / sqrt(mean(x^2, dim) + eps)"},
    {.kind = K::softmax, .name = "softmax", .min_inputs = 1, .max_inputs = 1,
     .levels = kK, .attrs = {dim_last}, .infer = infer_normalizing,
     .symbolic = S::expansion, .composite_lax = true, .fusion = F::opaque,
     .cost = Cost::per_operand_element,
     .slots = {.fp32 = 3, .sfu = 1},  // exp, sum, multiply by the row's reciprocal sum
     .doc = "exp(x) / sum(exp(x), dim) (no max subtraction: stays in the Lax fragment)"},
    {.kind = K::iter, .name = "iter", .min_inputs = 1, .max_inputs = 1, .levels = kAtBlock,
     .attrs = {{"imap", AttrKind::dim_map, false, std::vector<int64_t>{-1, -1, -1}},
               {"fmap", AttrKind::opt_dim, false, int64_t{-1}}},
     .infer = infer_iter, .symbolic = S::select, .homogeneous = 0b1,
     .fusion = F::injective,
     .doc = "input iterator: the block's slice (imap) and the iteration's chunk (fmap) of a kernel input"},
    {.kind = K::accum_sum, .name = "accum_sum", .min_inputs = 1, .max_inputs = 1,
     .levels = kAtBlock, .infer = infer_unary, .symbolic = S::sum,
     .homogeneous = 0b1, .fusion = F::reduction, .cost = Cost::per_operand_element,
     .slots = {.fp32 = 1}, .doc = "for-loop accumulator: sum over iterations"},
    {.kind = K::accum_max, .name = "accum_max", .min_inputs = 1, .max_inputs = 1,
     .levels = kAtBlock, .infer = infer_unary, .symbolic = S::max, .fusion = F::reduction,
     .cost = Cost::per_operand_element, .slots = {.fp32 = 1},
     .doc = "for-loop accumulator: elementwise maximum over iterations"},
    {.kind = K::accum_concat, .name = "accum_concat", .min_inputs = 1, .max_inputs = 1,
     .levels = kAtBlock, .attrs = {dim}, .infer = infer_accum_concat, .symbolic = S::select,
     .homogeneous = 0b1, .fusion = F::injective,
     .doc = "for-loop accumulator: iterations' tiles concatenated along dim"},
    {.kind = K::save, .name = "save", .min_inputs = 1, .max_inputs = 1, .levels = kAtBlock,
     .attrs = {{"omap", AttrKind::dim_map, false, std::vector<int64_t>{-1, -1, -1}}},
     .infer = infer_save, .symbolic = S::select, .homogeneous = 0b1,
     .fusion = F::injective,
     .doc = "output saver: blocks' tiles placed along the data dims of omap"},
    {.kind = K::kernel, .name = "kernel", .min_inputs = 1, .max_inputs = -1,
     .levels = kAtKernel, .symbolic = S::body, .fusion = F::opaque,
     .cost = Cost::body, .doc = "graph-defined kernel operator; its body is a block graph"},
    {.kind = K::thread, .name = "thread", .min_inputs = 1, .max_inputs = -1,
     .levels = kAtBlock, .symbolic = S::body, .fusion = F::opaque,
     .cost = Cost::body,
     .doc = "fused elementwise chain kept in registers; its body is a thread graph"},
    {.kind = K::sigmoid, .name = "sigmoid", .min_inputs = 1, .max_inputs = 1, .levels = kAll,
     .infer = infer_unary,
     .real = [](double x, double, const Attrs&) { return 1.0 / (1.0 + std::exp(-x)); },
     .fusion = F::elementwise,
     .code = {"(1.0f / (1.0f + std::exp(-{0})))", "(1.0f / (1.0f + expf(-{0})))"},
     .cost = Cost::per_result_element,
     .slots = {.fp32 = 2, .sfu = 2},  // exp(-x), 1 + ., reciprocal
     .doc = "1 / (1 + e^-x)"},
    {.kind = K::tanh, .name = "tanh", .min_inputs = 1, .max_inputs = 1, .levels = kAll,
     .infer = infer_unary, .real = [](double x, double, const Attrs&) { return std::tanh(x); },
     .fusion = F::elementwise, .code = {"std::tanh({0})", "tanhf({0})"},
     .cost = Cost::per_result_element,
     // tanhf: ex2 and a reciprocal on the SFU (1 - 2 / (e^2x + 1)), about 7 FP32 operations
     // for the range reduction, that form and the small-x polynomial.
     .slots = {.fp32 = 7, .sfu = 2},
     .doc = "hyperbolic tangent"},
    {.kind = K::neg, .name = "neg", .min_inputs = 1, .max_inputs = 1, .levels = kAll,
     .infer = infer_unary, .real = [](double x, double, const Attrs&) { return -x; },
     .lax_formula = "(mul x -1)", .homogeneous = 0b1, .fusion = F::elementwise,
     .code = {"(-{0})", "(-{0})"}, .cost = Cost::per_result_element, .slots = {.fp32 = 1},
     .doc = "-x"},
    {.kind = K::erf, .name = "erf", .min_inputs = 1, .max_inputs = 1, .levels = kAll,
     .infer = infer_unary, .real = [](double x, double, const Attrs&) { return std::erf(x); },
     .fusion = F::elementwise, .code = {"std::erf({0})", "erff({0})"},
     .cost = Cost::per_result_element,
     .slots = {.fp32 = 20},  // erff: a rational approximation, no SFU instruction
     .doc = "the error function 2/sqrt(pi) * integral of e^-t^2 from 0 to x"},
  };
  // clang-format on
  for (OpInfo& row : model_op_rows()) t.push_back(std::move(row));
  for (size_t i = 0; i < t.size(); ++i) {
    WEFT_CHECK(static_cast<size_t>(t[i].kind) == i, "op table out of order at {}", t[i].name);
    complete_row(t[i]);
  }
  WEFT_CHECK(static_cast<int>(t.size()) == kNumOpKinds, "op table incomplete");
  return t;
}

}  // namespace

const std::vector<OpInfo>& all_ops() {
  static const std::vector<OpInfo> table = make_table();
  return table;
}

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

std::string levels_text(uint8_t levels) {
  std::string where;
  auto add = [&](const char* s) { where += (where.empty() ? "" : ", ") + std::string(s); };
  if (levels & kAtKernel) add("kernel graphs");
  if (levels & kAtBlock) add("block graphs");
  if (levels & kAtThread) add("thread graphs");
  if (levels & kAtModel) add("model functions");
  return where;
}

bool Formula::uses_exp() const {
  for (const FormulaNode& n : nodes)
    if (n.op == FormulaOp::exp) return true;
  return false;
}

const char* fusion_pattern_name(FusionPattern pattern) {
  switch (pattern) {
    case FusionPattern::elementwise:
      return "elementwise";
    case FusionPattern::broadcast:
      return "broadcast";
    case FusionPattern::injective:
      return "injective";
    case FusionPattern::reduction:
      return "reduction";
    case FusionPattern::out_elementwise_fusable:
      return "out-elementwise-fusable";
    case FusionPattern::opaque:
      return "opaque";
  }
  return "?";
}

const AttrSpec* rational_attr(const OpInfo& info) {
  for (const AttrSpec& a : info.attrs)
    if (a.kind == AttrKind::rational) return &a;
  return nullptr;
}

static bool kind_matches(AttrKind kind, const AttrValue& v) {
  switch (kind) {
    case AttrKind::integer:
    case AttrKind::opt_dim:
      return std::holds_alternative<int64_t>(v);
    case AttrKind::rational:
      return std::holds_alternative<Rational>(v);
    case AttrKind::int_list:
    case AttrKind::dim_map:
      return std::holds_alternative<std::vector<int64_t>>(v);
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
      for (const AttrSpec& s : info.attrs)
        known += (known.empty() ? "" : ", ") + std::string(s.name);
      fail(fmt::format(
          "'{}' has no attribute '{}'{}", info.name, name,
          known.empty() ? std::string(" (it takes none)") : fmt::format(" (it takes: {})", known)));
    }
    if (!kind_matches(spec->kind, value)) {
      // Integers are rationals too.
      if (spec->kind == AttrKind::rational && std::holds_alternative<int64_t>(value)) continue;
      fail(fmt::format("attribute '{}' of '{}' has the wrong kind of value", name, info.name));
    }
  }
  for (const AttrSpec& s : info.attrs) {
    if (attrs.has(s.name)) {
      if (s.kind == AttrKind::rational &&
          std::holds_alternative<int64_t>(attrs.entries().at(s.name)))
        attrs.set(s.name, Rational(attrs.get_int(s.name)));
      continue;
    }
    if (s.required) fail(fmt::format("'{}' needs the attribute '{}'", info.name, s.name));
    attrs.set(s.name, s.default_value);
  }
}

}  // namespace weft
