// The model-only operators' implementations (the transformer set): shape rules, CPU semantics and
// the attention composite's expansion, attached to their rows of the operator table by kind; and
// the implementation every elementwise model-only row gets from its row.
#include "model/model_ops.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "core/around_dim.h"
#include "model/permute_values.h"

namespace weft {
int64_t const_int(DeduceContext& ctx, const SymExpr& e, const std::string& what, int64_t lo) {
  auto c = e.as_constant();
  if (!c || *c < lo) ctx.fail(fmt::format("{}={} must be an integer >= {}", what, e.str(), lo));
  return *c;
}

namespace {

// The permutation attribute: constants forming a permutation of 0..rank-1.
std::vector<int64_t> permutation(DeduceContext& ctx, const MAttrs& attrs, int rank) {
  std::vector<int64_t> perm;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (const SymExpr& e : sym_list(attrs, "perm")) {
    auto c = e.as_constant();
    if (!c) ctx.fail(fmt::format("perm entries must be integers, not '{}'", e.str()));
    int64_t d = *c < 0 ? *c + rank : *c;
    if (d < 0 || d >= rank || seen[static_cast<size_t>(d)])
      ctx.fail(fmt::format("perm={} is not a permutation of the {} dims", e.str(), rank));
    seen[static_cast<size_t>(d)] = true;
    perm.push_back(d);
  }
  if (static_cast<int>(perm.size()) != rank)
    ctx.fail(fmt::format("perm has {} entries for a tensor of rank {}", perm.size(), rank));
  return perm;
}

MType infer_permute(DeduceContext& ctx, const std::vector<MType>& in, const MAttrs& attrs) {
  auto perm = permutation(ctx, attrs, in[0].rank);
  if (!in[0].dims) return in[0];
  std::vector<SymExpr> out;
  for (int64_t d : perm) out.push_back((*in[0].dims)[static_cast<size_t>(d)]);
  return MType::tensor(in[0].dtype, out);
}

MType infer_embedding(DeduceContext& ctx, const std::vector<MType>& in, const MAttrs&) {
  const MType &table = in[0], &ids = in[1];
  if (table.rank != 2)
    ctx.fail(fmt::format("embedding's table must have rank 2 ([vocab, dim]), got {}", table.str()));
  if (ids.rank + 1 > kMaxModelRank) ctx.fail("embedding result rank is too large");
  if (!table.dims || !ids.dims) return MType::tensor_of_rank(table.dtype, ids.rank + 1);
  std::vector<SymExpr> out = *ids.dims;
  out.push_back((*table.dims)[1]);
  return MType::tensor(table.dtype, out);
}

// x with at least 2 dims: [..., rows, cols].
void require_matrix_like(DeduceContext& ctx, const MType& x, const char* op) {
  if (x.rank < 2) ctx.fail(fmt::format("{} needs a tensor of rank >= 2, got {}", op, x.str()));
}

MType infer_rope(DeduceContext& ctx, const std::vector<MType>& in, const MAttrs& attrs) {
  require_matrix_like(ctx, in[0], "rope");
  if (std::get<Rational>(attrs.at("theta")) < Rational(2)) ctx.fail("rope theta must be >= 2");
  if (in[0].dims)
    ctx.require_eq(floormod(in[0].dims->back(), SymExpr(2)), 0,
                   "rope's last dim (pairs of rotated features) to be even");
  (void)sym_int(attrs, "offset");
  return in[0];
}

MType infer_causal_mask(DeduceContext& ctx, const std::vector<MType>& in, const MAttrs&) {
  require_matrix_like(ctx, in[0], "causal_mask");
  return in[0];
}

MType infer_softmax_safe(DeduceContext& ctx, const std::vector<MType>& in, const MAttrs& attrs) {
  normalize_dim(ctx, sym_int(attrs, "dim"), in[0].rank, "dim");
  return in[0];
}

MType infer_slice(DeduceContext& ctx, const std::vector<MType>& in, const MAttrs& attrs) {
  const MType& x = in[0];
  int64_t d = normalize_dim(ctx, sym_int(attrs, "dim"), x.rank, "dim");
  const SymExpr &start = sym_int(attrs, "start"), &size = sym_int(attrs, "size");
  ctx.require_le(0, start, "slice start to be >= 0");
  ctx.require_le(0, size, "slice size to be >= 0");
  if (!x.dims) return x;
  std::vector<SymExpr> out = *x.dims;
  ctx.require_le(start + size, out[static_cast<size_t>(d)],
                 fmt::format("slice start + size to be within dim {}", d));
  out[static_cast<size_t>(d)] = size;
  return MType::tensor(x.dtype, out);
}

MType infer_layer_norm(DeduceContext& ctx, const std::vector<MType>& in, const MAttrs& attrs) {
  if (in[0].rank < 1) ctx.fail("layer_norm needs a tensor of rank >= 1");
  if (std::get<Rational>(attrs.at("eps")) < Rational(0)) ctx.fail("layer_norm eps must be >= 0");
  return in[0];
}

// q [..., s, d], k [..., t, d], v [..., t, e] -> [..., s, e].
MType infer_attention(DeduceContext& ctx, const std::vector<MType>& in, const MAttrs& attrs) {
  const MType &q = in[0], &k = in[1], &v = in[2];
  if (q.rank < 2 || k.rank != q.rank || v.rank != q.rank)
    ctx.fail(fmt::format("attention needs q, k, v of one rank >= 2, got {}, {}, {}", q.str(),
                         k.str(), v.str()));
  // Its expansion multiplies q by k and the probabilities by v: one dtype for all three.
  if (k.dtype != q.dtype || v.dtype != q.dtype)
    ctx.fail(fmt::format("attention needs q, k, v of one dtype, got {}, {}, {}; cast them first",
                         q.str(), k.str(), v.str()));
  auto causal = sym_int(attrs, "causal").as_constant();
  if (!causal || (*causal != 0 && *causal != 1)) ctx.fail("attention causal must be 0 or 1");
  if (!q.dims || !k.dims || !v.dims) return MType::tensor_of_rank(q.dtype, q.rank);
  auto r = static_cast<size_t>(q.rank);
  const auto &qd = *q.dims, &kd = *k.dims, &vd = *v.dims;
  ctx.require_eq(qd[r - 1], kd[r - 1], "the head dims of q and k to agree");
  ctx.require_eq(kd[r - 2], vd[r - 2], "the key lengths of k and v to agree");
  std::vector<SymExpr> out;
  for (size_t i = 0; i + 2 < r; ++i)
    out.push_back(broadcast_dim(ctx, broadcast_dim(ctx, qd[i], kd[i], i), vd[i], i));
  out.push_back(qd[r - 2]);
  out.push_back(vd[r - 1]);
  return MType::tensor(q.dtype, out);
}

// softmax(q k^T * scale [+ causal mask at offset]) v, as permute, matmul, scale, causal_mask,
// softmax_safe and matmul bindings.
std::vector<Binding> expand_attention(const Binding& b, const std::vector<MType>& in,
                                      const std::function<std::string(const char*)>& fresh) {
  const Call& c = b.call;
  int r = in[0].rank;
  std::vector<Binding> out;
  auto add = [&](std::string var, CallKind kind, const char* callee, std::vector<std::string> args,
                 MAttrs attrs) {
    Binding x;
    x.var = std::move(var);
    x.loc = b.loc;
    x.call.kind = kind;
    x.call.callee = callee;
    x.call.args = std::move(args);
    x.call.attrs = std::move(attrs);
    x.call.loc = c.loc;
    out.push_back(std::move(x));
    return out.back().var;
  };
  std::vector<SymExpr> perm;
  for (int i = 0; i < r - 2; ++i) perm.push_back(i);
  perm.push_back(r - 1);
  perm.push_back(r - 2);
  std::string kt = add(fresh("kt"), CallKind::op, "permute", {c.args[1]}, {{"perm", perm}});
  std::string s = add(fresh("scores"), CallKind::op, "matmul", {c.args[0], kt}, {});
  std::string p = add(fresh("scaled"), CallKind::op, "scale", {s},
                      {{"factor", std::get<Rational>(c.attrs.at("scale"))}});
  if (std::get<SymExpr>(c.attrs.at("causal")).as_constant() == 1)
    p = add(fresh("masked"), CallKind::op, "causal_mask", {p},
            {{"offset", std::get<SymExpr>(c.attrs.at("offset"))}});
  std::string w = add(fresh("probs"), CallKind::op, "softmax_safe", {p}, {{"dim", SymExpr(-1)}});
  add(b.var, CallKind::op, "matmul", {w, c.args[2]}, {});
  return out;
}

// Calls fn(outer, row) for each row of the last dim: the rows of a [..., rows, cols] tensor.
int64_t last_dim(const Tensor<double>& t) {
  return t.shape.empty() ? 1 : t.shape.back();
}

Tensor<double> eval_permute(const std::vector<const Tensor<double>*>& in, const Attrs& attrs) {
  const Tensor<double>& x = *in[0];
  const std::vector<int64_t> p = normalized_perm(attrs.get_list("perm"), x.shape.size());
  Tensor<double> out(permuted_shape(x.shape, p), 0.0);
  permute_values(x.data.data(), x.shape, p, out.data.data());
  return out;
}

Tensor<double> eval_embedding(const std::vector<const Tensor<double>*>& in, const Attrs&) {
  const Tensor<double>&table = *in[0], &ids = *in[1];
  int64_t vocab = table.shape[0], dim = table.shape[1];
  Shape out_shape = ids.shape;
  out_shape.push_back(dim);
  Tensor<double> out(out_shape, 0.0);
  for (int64_t i = 0; i < ids.numel(); ++i) {
    double v = ids.data[static_cast<size_t>(i)];
    if (!(v >= 0 && v < static_cast<double>(vocab)) || v != std::floor(v))
      throw UserError(
          fmt::format("embedding index {} (element {} of the ids) is not an integer "
                      "in [0, {})",
                      v, i, vocab));
    auto row = static_cast<int64_t>(v);
    std::copy_n(table.data.begin() + row * dim, dim, out.data.begin() + i * dim);
  }
  return out;
}

// Rotate-half rotary embedding: feature j < d/2 pairs with j + d/2, rotated by the angle
// pos * theta^(-2j/d), where pos = offset + the row index along dim -2.
Tensor<double> eval_rope(const std::vector<const Tensor<double>*>& in, const Attrs& attrs) {
  const Tensor<double>& x = *in[0];
  int64_t d = last_dim(x), rows = x.shape[x.shape.size() - 2], half = d / 2;
  int64_t offset = attrs.get_int("offset");
  double theta = attrs.get_rational("theta").to_double();
  Tensor<double> out(x.shape, 0.0);
  for (int64_t r = 0; r < x.numel() / d; ++r) {
    double pos = static_cast<double>(offset + r % rows);
    const double* src = x.data.data() + r * d;
    double* dst = out.data.data() + r * d;
    for (int64_t j = 0; j < half; ++j) {
      double angle = pos * std::pow(theta, -2.0 * static_cast<double>(j) / static_cast<double>(d));
      double c = std::cos(angle), s = std::sin(angle);
      dst[j] = src[j] * c - src[j + half] * s;
      dst[j + half] = src[j + half] * c + src[j] * s;
    }
  }
  return out;
}

Tensor<double> eval_causal_mask(const std::vector<const Tensor<double>*>& in, const Attrs& attrs) {
  Tensor<double> out = *in[0];
  int64_t cols = last_dim(out), rows = out.shape[out.shape.size() - 2];
  int64_t offset = attrs.get_int("offset");
  for (int64_t r = 0; r < out.numel() / cols; ++r)
    for (int64_t j = 0; j < cols; ++j)
      if (j > r % rows + offset)
        out.data[static_cast<size_t>(r * cols + j)] = -std::numeric_limits<double>::infinity();
  return out;
}

// In double whatever the element type T (the f32 lane stores the result in f32).
template <class T>
Tensor<T> softmax_safe_of(const Tensor<T>& x, const Attrs& attrs) {
  Tensor<T> out = x;
  int64_t r = static_cast<int64_t>(out.shape.size());
  int64_t dim = attrs.get_int("dim");
  if (dim < 0) dim += r;
  int64_t n = out.shape[static_cast<size_t>(dim)];
  int64_t inner = 1;
  for (int64_t i = dim + 1; i < r; ++i) inner *= out.shape[static_cast<size_t>(i)];
  int64_t outer = out.numel() / std::max<int64_t>(n * inner, 1);
  std::vector<double> e(static_cast<size_t>(std::max<int64_t>(n, 0)));  // a row, unrounded
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < inner; ++k) {
      auto at = [&](int64_t i) -> T& {
        return out.data[static_cast<size_t>((o * n + i) * inner + k)];
      };
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t i = 0; i < n; ++i) m = std::max(m, static_cast<double>(at(i)));
      double sum = 0;
      for (int64_t i = 0; i < n; ++i)
        sum += (e[static_cast<size_t>(i)] = std::exp(static_cast<double>(at(i)) - m));
      for (int64_t i = 0; i < n; ++i) at(i) = static_cast<T>(e[static_cast<size_t>(i)] / sum);
    }
  return out;
}

Tensor<double> eval_softmax_safe(const std::vector<const Tensor<double>*>& in, const Attrs& attrs) {
  return softmax_safe_of(*in[0], attrs);
}
Tensor<float> eval_softmax_safe_f32(const std::vector<HostOperand>& in, const Attrs& attrs) {
  return softmax_safe_of(in[0].to_tensor<float>(), attrs);
}

// A slice's dim (normalized), start and size, checked against the operand's shape.
struct SliceRange {
  int64_t dim, start, size;
};
SliceRange slice_range(const Shape& shape, const Attrs& attrs) {
  auto r = static_cast<int64_t>(shape.size());
  int64_t d = attrs.get_int("dim"), start = attrs.get_int("start"), size = attrs.get_int("size");
  if (d < 0) d += r;
  int64_t extent = shape[static_cast<size_t>(d)];
  if (start < 0 || size < 0 || start > extent - size)
    throw UserError(fmt::format("slice [{}, {}) of dim {} is outside its extent {}", start,
                                start + size, d, extent));
  return {d, start, size};
}

Tensor<double> eval_slice(const std::vector<const Tensor<double>*>& in, const Attrs& attrs) {
  const Tensor<double>& x = *in[0];
  const SliceRange s = slice_range(x.shape, attrs);
  std::vector<int64_t> first(x.shape.size(), 0);
  Shape sizes = x.shape;
  first[static_cast<size_t>(s.dim)] = s.start;
  sizes[static_cast<size_t>(s.dim)] = s.size;
  if (numel(sizes) == 0) return Tensor<double>(sizes, 0.0);
  return slice_box(x, first, sizes);
}

// The f32 lane's slice: runs of the operand's rows copied as they are (f32) or rounded (f64).
template <class T>
void copy_slice(const T* x, const Shape& shape, const SliceRange& s, float* out) {
  const AroundDim around = around_dim(shape, static_cast<size_t>(s.dim));
  const int64_t run = s.size * around.inner;
  for (int64_t o = 0; o < around.outer; ++o) {
    const T* from = x + (o * around.extent + s.start) * around.inner;
    std::transform(from, from + run, out + o * run, [](T v) { return static_cast<float>(v); });
  }
}

Tensor<float> eval_slice_f32(const std::vector<HostOperand>& in, const Attrs& attrs) {
  const HostOperand& x = in[0];
  const SliceRange s = slice_range(*x.shape, attrs);
  Shape sizes = *x.shape;
  sizes[static_cast<size_t>(s.dim)] = s.size;
  Tensor<float> out(sizes, 0.0f);
  if (x.f32)
    copy_slice(x.f32, *x.shape, s, out.data.data());
  else
    copy_slice(x.f64, *x.shape, s, out.data.data());
  return out;
}

// In double whatever the element type T, as softmax_safe_of.
template <class T>
Tensor<T> layer_norm_of(const Tensor<T>& x, const Attrs& attrs) {
  Tensor<T> out = x;
  const int64_t d = out.shape.empty() ? 1 : out.shape.back();
  double eps = attrs.get_rational("eps").to_double();
  for (int64_t r = 0; d > 0 && r < out.numel() / d; ++r) {
    T* row = out.data.data() + r * d;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < d; ++j) mean += static_cast<double>(row[j]);
    mean /= static_cast<double>(d);
    for (int64_t j = 0; j < d; ++j)
      var += (static_cast<double>(row[j]) - mean) * (static_cast<double>(row[j]) - mean);
    var /= static_cast<double>(d);
    double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t j = 0; j < d; ++j)
      row[j] = static_cast<T>((static_cast<double>(row[j]) - mean) * inv);
  }
  return out;
}

Tensor<double> eval_layer_norm(const std::vector<const Tensor<double>*>& in, const Attrs& attrs) {
  return layer_norm_of(*in[0], attrs);
}
Tensor<float> eval_layer_norm_f32(const std::vector<HostOperand>& in, const Attrs& attrs) {
  return layer_norm_of(in[0].to_tensor<float>(), attrs);
}

// The implementations of the transformer set's model-only operators.
std::vector<std::pair<OpKind, ModelOpImpl>> transformer_impls() {
  using K = OpKind;
  return {
      {K::permute, {infer_permute, eval_permute}},
      {K::embedding, {infer_embedding, eval_embedding}},
      {K::rope, {infer_rope, eval_rope}},
      {K::causal_mask, {infer_causal_mask, eval_causal_mask}},
      {K::softmax_safe, {infer_softmax_safe, eval_softmax_safe, nullptr, eval_softmax_safe_f32}},
      {K::slice, {infer_slice, eval_slice, nullptr, eval_slice_f32}},
      {K::layer_norm, {infer_layer_norm, eval_layer_norm, nullptr, eval_layer_norm_f32}},
      {K::attention, {infer_attention, nullptr, expand_attention}},
  };
}

// An elementwise model-only row's CPU semantics: its real semantics element by element, the
// operands broadcast to the shape its concrete shape rule gives.
Tensor<double> eval_scalar_op(const OpInfo& info, const std::vector<const Tensor<double>*>& in,
                              const Attrs& attrs) {
  std::vector<TensorType> types;
  for (const Tensor<double>* t : in) types.push_back({DType::f32, t->shape});
  Attrs normalized = attrs;
  const Shape shape = info.shape.concrete(types, normalized, InferContext{}).at(0).shape;
  const ScalarConstants c = scalar_constants(info, attrs);
  ScalarArgs s{.k = c.k, .k2 = c.k2};
  double* operand[] = {&s.x, &s.y, &s.z};
  Tensor<double> out(shape, 0.0);
  bool same = true;
  for (const Tensor<double>* t : in) same = same && t->shape == shape;
  if (same) {  // no broadcasting: element i of every operand
    for (size_t o = 0; o < out.data.size(); ++o) {
      for (size_t j = 0; j < in.size(); ++j) *operand[j] = in[j]->data[o];
      out.data[o] = info.real(s);
    }
    return out;
  }
  std::vector<std::vector<int64_t>> strides;
  for (const Tensor<double>* t : in) strides.push_back(broadcast_strides(t->shape, shape));
  for_each_index(shape, [&](int64_t o, const std::vector<int64_t>& idx) {
    for (size_t j = 0; j < in.size(); ++j) {
      int64_t at = 0;
      for (size_t d = 0; d < idx.size(); ++d) at += idx[d] * strides[j][d];
      *operand[j] = in[j]->data[static_cast<size_t>(at)];
    }
    out.data[static_cast<size_t>(o)] = info.real(s);
  });
  return out;
}

// The implementation an elementwise model-only row gives itself.
ModelOpImpl scalar_op_impl(OpKind kind) {
  return {[kind](DeduceContext& ctx, const std::vector<MType>& in, const MAttrs& attrs) {
            MAttrs completed = attrs;
            return deduce_by_row_rule(ctx, op_info(kind), in, completed);
          },
          [kind](const std::vector<const Tensor<double>*>& in, const Attrs& attrs) {
            return eval_scalar_op(op_info(kind), in, attrs);
          }};
}

// One slot per operator kind, filled for exactly the model-only rows.
std::vector<std::optional<ModelOpImpl>> make_impls() {
  std::vector<std::optional<ModelOpImpl>> impls(kNumOpKinds);
  auto add = [&](const std::vector<std::pair<OpKind, ModelOpImpl>>& list) {
    for (const auto& [kind, impl] : list) {
      const char* name = op_info(kind).name;
      WEFT_CHECK(is_model_only(kind), "'{}' is no model-only row but has a model implementation",
                 name);
      WEFT_CHECK(!impls[static_cast<size_t>(kind)], "'{}' has two model implementations", name);
      WEFT_CHECK(!has_scalar_forms(op_info(kind)),
                 "elementwise '{}' has a model implementation besides its row's", name);
      WEFT_CHECK(impl.infer && (impl.eval == nullptr) != (impl.expand == nullptr),
                 "'{}' needs a shape rule and either CPU semantics or an expansion", name);
      impls[static_cast<size_t>(kind)] = impl;
    }
  };
  add(transformer_impls());
  add(onnx_model_op_impls());
  add(window_model_op_impls());
  for (const OpInfo& info : all_ops()) {
    if (is_model_only(info.kind) && has_scalar_forms(info))
      impls[static_cast<size_t>(info.kind)] = scalar_op_impl(info.kind);
    WEFT_CHECK(!is_model_only(info.kind) || impls[static_cast<size_t>(info.kind)],
               "model-only '{}' has no model implementation", info.name);
  }
  return impls;
}

}  // namespace

const ModelOpImpl* model_impl(OpKind kind) {
  static const std::vector<std::optional<ModelOpImpl>> impls = make_impls();
  const auto& impl = impls[static_cast<size_t>(kind)];
  return impl ? &*impl : nullptr;
}

}  // namespace weft
