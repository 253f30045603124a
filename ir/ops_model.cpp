// The operator table's model-only rows: the operators a model function calls that no µGraph holds
// (data movement with symbolic sizes, gathers, position-dependent and ONNX operators). An
// elementwise one is whole here: shape rule, real semantics, constants and CUDA form. The others'
// shape rules, CPU semantics and expansions live in the model layer (model/model_ops.h), keyed by
// kind; here are their form, documentation and device kernel family.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "ir/cast.h"
#include "ir/ops.h"
#include "ir/shape_rules.h"

namespace weft {

namespace {

double gelu_tanh(const ScalarArgs& s) {
  const double c = std::sqrt(2.0 / std::acos(-1.0));
  return 0.5 * s.x * (1.0 + std::tanh(c * (s.x + 0.044715 * s.x * s.x * s.x)));
}

// x^y. The squares and cubes exporters write (GELU's tanh form) skip pow, which costs tens of
// cycles an element in the VM's f32 lane: x * x is correctly rounded, and so is x * x * x when x
// is an f32 value (x * x is then exact); pow is within an ulp of either.
double pow_of(const ScalarArgs& s) {
  if (s.y == 2.0) return s.x * s.x;
  if (s.y == 3.0 && static_cast<double>(static_cast<float>(s.x)) == s.x) return s.x * s.x * s.x;
  return std::pow(s.x, s.y);
}

// cast's constants: the target's kind and bits (the code is checked by the shape rule first).
ScalarConstants cast_constants(const Attrs& attrs) {
  const CastTarget* t = cast_target(attrs.get_int("to"));
  if (!t) throw UserError(fmt::format("cast to={} is not a dtype code", attrs.get_int("to")));
  return {static_cast<double>(t->kind), static_cast<double>(t->bits)};
}

double cast(const ScalarArgs& s) {
  return cast_scalar(s.x, static_cast<CastTarget::Kind>(s.k), static_cast<int>(s.k2));
}

using K = OpKind;
using S = Symbolic;
using F = FusionPattern;
using D = DeviceKernel;
using Cost = CostClass;
using L = std::vector<int64_t>;
constexpr bool kMoves = true, kComputes = false;

// A row of `n` operands that the device executor runs with `device`; `moves`: it only moves or
// gathers elements (injective), else it computes (opaque to a fuser).
OpInfo row(K kind, int n, std::vector<AttrSpec> attrs, bool moves, D device, const char* doc) {
  return OpInfo{.kind = kind,
                .min_inputs = n,
                .max_inputs = n,
                .levels = kAtModel,
                .attrs = std::move(attrs),
                .symbolic = S::none,
                .fusion = moves ? F::injective : F::opaque,
                .cost = moves ? Cost::data_movement : Cost::per_operand_element,
                .device = device,
                .doc = doc};
}

// An elementwise row: real semantics and CUDA form (ops.h's ScalarCode: {0} {1} {4} operands,
// {2} {3} constants); its shape rule is shape_rules::elementwise unless `shape` says otherwise.
OpInfo scalar(K kind, int n, std::vector<AttrSpec> attrs, RealFn real, const char* cuda,
              const char* doc, ShapeRule shape = {}, ConstantsFn constants = nullptr) {
  return OpInfo{.kind = kind,
                .min_inputs = n,
                .max_inputs = n,
                .levels = kAtModel,
                .attrs = std::move(attrs),
                .shape = shape,
                .real = real,
                .constants = constants,
                .symbolic = S::none,
                .fusion = F::opaque,
                .code = {.cuda = cuda},
                .cost = Cost::per_operand_element,
                .doc = doc};
}

// The transformer set: data movement with symbolic sizes, gathers, position-dependent operators.
std::vector<OpInfo> transformer_rows() {
  const AttrSpec offset{"offset", AttrKind::integer, false, int64_t{0}};
  // clang-format off
  return {
    row(K::permute, 1, {{"perm", AttrKind::int_list, true, L{}}}, kMoves, D::movement,
        "dims reordered: result dim i is operand dim perm[i]"),
    row(K::embedding, 2, {}, kMoves, D::gather,
        "embedding(table[V, D], ids[...]) -> [..., D]: rows of the table gathered by integer ids"),
    row(K::rope, 1, {offset, {"theta", AttrKind::rational, false, Rational(10000)}},
        kComputes, D::position,
        "rotary position embedding (rotate-half pairs j, j + d/2) at positions offset + row of dim -2"),
    row(K::causal_mask, 1, {offset}, kComputes, D::position,
        "[..., s, t]: entry (i, j) becomes -inf where j > i + offset"),
    row(K::softmax_safe, 1, {{"dim", AttrKind::integer, false, int64_t{-1}}},
        kComputes, D::rows, "exp(x - max) / sum(exp(x - max)) over dim (numerically safe; not Lax)"),
    row(K::slice, 1,
        {{"dim", AttrKind::integer, true, int64_t{0}}, {"start", AttrKind::integer, true, int64_t{0}},
         {"size", AttrKind::integer, true, int64_t{0}}},
        kMoves, D::movement, "the `size` entries of dim from `start` on (symbolic start and size)"),
    scalar(K::where, 3, {}, [](const ScalarArgs& s) { return s.x != 0 ? s.y : s.z; },
           "({0} != 0.0f ? {1} : {4})",
           "where(cond, a, b): a where cond != 0, else b; the three broadcast (equal dims or 1)",
           shape_rules::where),
    row(K::layer_norm, 1, {{"eps", AttrKind::rational, false, Rational(0)}},
        kComputes, D::rows,
        "(x - mean) / sqrt(var + eps) over the last dim (no weight: mul and add follow)"),
    scalar(K::gelu_tanh, 1, {}, gelu_tanh,
           "(0.5f * {0} * (1.0f + tanhf(0.79788456080286536f * ({0} + 0.044715f * {0} * {0} * "
           "{0}))))",
           "0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): gelu's tanh form"),
    row(K::attention, 3,
        {{"scale", AttrKind::rational, true, Rational(1)},
         {"causal", AttrKind::integer, false, int64_t{0}}, offset},
        kComputes, D::none,
        "attention(q[..., s, d], k[..., t, d], v[..., t, e]) -> [..., s, e]: softmax(q k^T scale, "
        "causal mask at offset when causal=1) v; a composite, run as its expansion"),
  };
  // clang-format on
}

// ONNX's operators beyond the transformer set (issue 15).
std::vector<OpInfo> onnx_rows() {
  const AttrSpec strides{"strides", AttrKind::int_list, false, L{}};
  const AttrSpec pads{"pads", AttrKind::int_list, false, L{}};
  const AttrSpec dilations{"dilations", AttrKind::int_list, false, L{}};
  const AttrSpec kernel{"kernel", AttrKind::int_list, true, L{}};
  const AttrSpec ceil_mode{"ceil_mode", AttrKind::integer, false, int64_t{0}};
  // clang-format off
  return {
    row(K::conv, 2,
        {strides, pads, dilations, {"group", AttrKind::integer, false, int64_t{1}}}, kComputes,
        D::window,
        "conv(x[N, C, *in], w[M, C/group, *k]) -> [N, M, *out], 1-3 spatial dims, no bias; "
        "out = floor((in + pad_b + pad_e - dil (k - 1) - 1) / stride) + 1; pads = [begins, ends]; "
        "empty lists: strides 1, pads 0, dilations 1"),
    row(K::max_pool, 1, {kernel, strides, pads, dilations, ceil_mode}, kComputes, D::window,
        "ONNX MaxPool over [N, C, *spatial]: padding never wins; ceil_mode keeps a last window "
        "that starts inside the input or its left padding"),
    row(K::avg_pool, 1,
        {kernel, strides, pads, dilations, ceil_mode,
         {"count_include_pad", AttrKind::integer, false, int64_t{0}}},
        kComputes, D::window,
        "ONNX AveragePool: the mean of the taps inside the input (count_include_pad=1: divided by "
        "the taps inside the padded extent)"),
    row(K::max_pool_indices, 1, {kernel, strides, pads, dilations, ceil_mode},
        kComputes, D::window,
        "ONNX MaxPool's second output: the flattened [N, C, *spatial] index of each maximum "
        "(first on ties, storage_order 0)"),
    row(K::global_avg_pool, 1, {}, kComputes, D::rows,
        "[N, C, *spatial] -> [N, C, 1, ...]: the mean over the spatial dims"),
    row(K::global_max_pool, 1, {}, kComputes, D::rows,
        "[N, C, *spatial] -> [N, C, 1, ...]: the max over the spatial dims"),
    row(K::lrn, 1,
        {{"size", AttrKind::integer, true, int64_t{1}},
         {"alpha", AttrKind::rational, false, *Rational::make(1, 10000)},
         {"beta", AttrKind::rational, false, *Rational::make(3, 4)},
         {"bias", AttrKind::rational, false, Rational(1)}},
        kComputes, D::window,
        "ONNX LRN: x / (bias + alpha / size * sum of x^2 over channels c - floor((size-1)/2) .. "
        "c + ceil((size-1)/2))^beta"),
    scalar(K::pow, 2, {}, pow_of,
           "powf({0}, {1})",
           "pow(x, y): x^y elementwise; operands of one rank whose size-1 dims broadcast"),
    row(K::gather, 2, {{"axis", AttrKind::integer, false, int64_t{0}}}, kMoves, D::gather,
        "ONNX Gather: x[:axis] + idx + x[axis+1:] from integer indices (negative: from the end)"),
    row(K::slice_steps, 1,
        {{"starts", AttrKind::int_list, true, L{}}, {"ends", AttrKind::int_list, true, L{}},
         {"axes", AttrKind::int_list, false, L{}}, {"steps", AttrKind::int_list, false, L{}}},
        kMoves, D::movement,
        "ONNX Slice with its own normalization: negative starts/ends count from the end, then "
        "clamped as ONNX clamps (any value beyond a dim may be written); empty axes: 0.., empty "
        "steps: 1; symbolic starts and ends must be >= 0"),
    row(K::expand, 1, {{"shape", AttrKind::int_list, true, L{}}}, kMoves, D::movement,
        "ONNX Expand: x broadcast with `shape` (aligned at the right, 1s on either side broadcast)"),
    row(K::fill, 0,
        {{"shape", AttrKind::int_list, true, L{}}, {"value", AttrKind::rational, false, Rational(0)}},
        kComputes, D::generate,
        "ONNX ConstantOfShape: an f32 tensor of `shape` filled with `value` (a cast follows for "
        "other types)"),
    row(K::dims_tensor, 0, {{"values", AttrKind::int_list, true, L{}}}, kComputes, D::generate,
        "the 1-D tensor of the evaluated (symbolic) `values`: ONNX Shape's output, materialized"),
    scalar(K::cast, 1, {{"to", AttrKind::integer, true, int64_t{1}}}, cast,
           "weft_dk_cast({0}, {2}, {3})",
           "ONNX Cast; `to` is ONNX's dtype code (1 f32, 2 u8, 3 i8, 4 u16, 5 i16, 6 i32, 7 i64, "
           "9 bool, 10 f16, 11 f64, 12 u32, 13 u64, 16 bf16): values rounded as the type rounds "
           "(ints toward zero, wrapping); the result has the target's dtype (u16, u32, u64: i64)",
           shape_rules::cast, cast_constants),
    // NaN stays NaN, as std::clamp keeps it.
    scalar(K::clip, 1,
           {{"min", AttrKind::rational, false, Rational(-(int64_t{1} << 62))},
            {"max", AttrKind::rational, false, Rational(int64_t{1} << 62)}},
           [](const ScalarArgs& s) { return std::isnan(s.x) ? s.x : std::clamp(s.x, s.k, s.k2); },
           "({0} != {0} ? {0} : fminf(fmaxf({0}, {2}), {3}))",
           "ONNX Clip: min(max(x, min), max); an absent bound is -+2^62 (beyond any a model clips at)",
           shape_rules::clip),
    scalar(K::abs, 1, {}, [](const ScalarArgs& s) { return std::abs(s.x); }, "fabsf({0})", "|x|"),
    scalar(K::reciprocal, 1, {}, [](const ScalarArgs& s) { return 1.0 / s.x; }, "(1.0f / {0})",
           "1 / x"),
    scalar(K::log, 1, {}, [](const ScalarArgs& s) { return std::log(s.x); }, "logf({0})",
           "the natural logarithm"),
    row(K::range, 0,
        {{"start", AttrKind::integer, false, int64_t{0}}, {"limit", AttrKind::integer, true, int64_t{0}},
         {"delta", AttrKind::integer, false, int64_t{1}}},
        kComputes, D::generate,
        "ONNX Range over integers: start, start + delta, ... before limit (max(0, ceil((limit - "
        "start) / delta)) entries; symbolic start and limit)"),
    row(K::tile, 1, {{"repeats", AttrKind::int_list, true, L{}}}, kMoves, D::movement,
        "ONNX Tile: x repeated `repeats[i]` times along dim i (whole copies, not interleaved)"),
    row(K::pad, 1,
        {{"pads", AttrKind::int_list, true, L{}}, {"value", AttrKind::rational, false, Rational(0)}},
        kMoves, D::movement,
        "ONNX Pad, constant mode: pads = [begins, ends] per dim (negative ones crop), filled with "
        "`value`"),
  };
  // clang-format on
}

// A truth value as the VM holds it: a bool tensor's element is 1 or 0.
double truth(bool b) {
  return b ? 1.0 : 0.0;
}

// NaN in either operand gives NaN, as numpy's maximum and onnxruntime's Max do (std::max and
// fmaxf would drop it).
double nan_or(double x, double y, double v) {
  return std::isnan(x) || std::isnan(y) ? x + y : v;
}

// IsInf's constants: which signs count.
ScalarConstants is_inf_constants(const Attrs& attrs) {
  return {static_cast<double>(attrs.get_int("detect_positive")),
          static_cast<double>(attrs.get_int("detect_negative"))};
}

// The operators exporters emit for attention masks, NaN guards, rotary tables and index lookups
// (issue 29). Comparisons, logical operators, is_nan and is_inf give bool tensors (a NaN operand
// compares false); logical operands are true when nonzero.
std::vector<OpInfo> mask_rows() {
  using A = const ScalarArgs&;
  const ShapeRule P = shape_rules::predicate;
  // clang-format off
  return {
    scalar(K::equal, 2, {}, [](A s) { return truth(s.x == s.y); },
           "({0} == {1} ? 1.0f : 0.0f)", "x == y (ONNX Equal)", P),
    scalar(K::less, 2, {}, [](A s) { return truth(s.x < s.y); },
           "({0} < {1} ? 1.0f : 0.0f)", "x < y (ONNX Less)", P),
    scalar(K::less_equal, 2, {}, [](A s) { return truth(s.x <= s.y); },
           "({0} <= {1} ? 1.0f : 0.0f)", "x <= y (ONNX LessOrEqual)", P),
    scalar(K::greater, 2, {}, [](A s) { return truth(s.x > s.y); },
           "({0} > {1} ? 1.0f : 0.0f)", "x > y (ONNX Greater)", P),
    scalar(K::greater_equal, 2, {}, [](A s) { return truth(s.x >= s.y); },
           "({0} >= {1} ? 1.0f : 0.0f)", "x >= y (ONNX GreaterOrEqual)", P),
    scalar(K::logical_and, 2, {}, [](A s) { return truth(s.x != 0 && s.y != 0); },
           "({0} != 0.0f && {1} != 0.0f ? 1.0f : 0.0f)", "x and y (nonzero is true)", P),
    scalar(K::logical_or, 2, {}, [](A s) { return truth(s.x != 0 || s.y != 0); },
           "({0} != 0.0f || {1} != 0.0f ? 1.0f : 0.0f)", "x or y (nonzero is true)", P),
    scalar(K::logical_xor, 2, {}, [](A s) { return truth((s.x != 0) != (s.y != 0)); },
           "(({0} != 0.0f) != ({1} != 0.0f) ? 1.0f : 0.0f)", "x xor y (nonzero is true)", P),
    scalar(K::logical_not, 1, {}, [](A s) { return truth(s.x == 0); },
           "({0} == 0.0f ? 1.0f : 0.0f)", "not x (nonzero is true)", P),
    scalar(K::is_nan, 1, {}, [](A s) { return truth(std::isnan(s.x)); },
           "({0} != {0} ? 1.0f : 0.0f)", "true where x is NaN (ONNX IsNaN)", P),
    scalar(K::is_inf, 1,
           {{"detect_positive", AttrKind::integer, false, int64_t{1}},
            {"detect_negative", AttrKind::integer, false, int64_t{1}}},
           [](A s) { return truth(std::isinf(s.x) && (s.x > 0 ? s.k != 0 : s.k2 != 0)); },
           "(fabsf({0}) > 3.40282347e38f && ({0} > 0.0f ? {2} != 0.0f : {3} != 0.0f) ? 1.0f : 0.0f)",
           "true where x is +inf (detect_positive) or -inf (detect_negative) (ONNX IsInf)",
           P, is_inf_constants),
    scalar(K::maximum, 2, {}, [](A s) { return nan_or(s.x, s.y, std::max(s.x, s.y)); },
           "({0} != {0} || {1} != {1} ? {0} + {1} : fmaxf({0}, {1}))",
           "the larger of x and y, NaN if either is (ONNX Max of two)"),
    scalar(K::minimum, 2, {}, [](A s) { return nan_or(s.x, s.y, std::min(s.x, s.y)); },
           "({0} != {0} || {1} != {1} ? {0} + {1} : fminf({0}, {1}))",
           "the smaller of x and y, NaN if either is (ONNX Min of two)"),
    scalar(K::cos, 1, {}, [](A s) { return std::cos(s.x); }, "cosf({0})", "cosine (radians)"),
    scalar(K::sin, 1, {}, [](A s) { return std::sin(s.x); }, "sinf({0})", "sine (radians)"),
    row(K::gather_elements, 2, {{"axis", AttrKind::integer, false, int64_t{0}}}, kMoves, D::gather,
        "ONNX GatherElements: out[i] = x[i with dim axis replaced by idx[i]]; idx has x's rank "
        "and no larger dims, the result its shape (negative indices count from the end)"),
    row(K::gather_nd, 2, {{"batch_dims", AttrKind::integer, false, int64_t{0}}}, kMoves, D::gather,
        "ONNX GatherND: idx[..., m] picks slices x[b..., i0, .., im-1, ...] (m constant, the "
        "first batch_dims dims shared); result idx.shape[:-1] + x.shape[batch_dims + m:]"),
    row(K::scatter_nd, 3, {{"reduction", AttrKind::integer, false, int64_t{0}}}, kComputes, D::none,
        "ONNX ScatterND: data with updates[i...] written at the slice idx[i..., :k] picks "
        "(reduction 0: replaced, a later index tuple winning; 1 add, 2 mul, 3 max, 4 min); updates "
        "are idx.shape[:-1] + data.shape[k:]; on the host"),
  };
  // clang-format on
}

// Rows the model compile makes from others, never an importer.
std::vector<OpInfo> fused_rows() {
  OpInfo fused = row(
      K::fused_conv, 3,
      {{"strides", AttrKind::int_list, false, L{}},
       {"pads", AttrKind::int_list, false, L{}},
       {"dilations", AttrKind::int_list, false, L{}},
       {"group", AttrKind::integer, false, int64_t{1}},
       {"min", AttrKind::rational, false, Rational(-(int64_t{1} << 62))},
       {"max", AttrKind::rational, false, Rational(int64_t{1} << 62)},
       {"silu", AttrKind::integer, false, int64_t{0}}},
      kComputes, D::none,
      "fused_conv(x, w, bias[1, M, 1, ...], residual?): conv(x, w) + bias (+ residual), clipped "
      "to [min, max], then v * sigmoid(v) when silu=1; a convolution with its epilogue, one CPU "
      "library call (made by the model compile's fuse step, docs/model-layer.md)");
  fused.max_inputs = 4;
  return {fused};
}

}  // namespace

std::vector<OpInfo> model_op_rows() {
  std::vector<OpInfo> rows = transformer_rows();
  for (OpInfo& row : onnx_rows()) rows.push_back(std::move(row));
  for (OpInfo& row : mask_rows()) rows.push_back(std::move(row));
  for (OpInfo& row : fused_rows()) rows.push_back(std::move(row));
  return rows;
}

}  // namespace weft
