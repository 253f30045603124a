// The implementations of the model-only operators for ONNX's data movement beyond the transformer
// set (issue 15): gather, strided slices, expand, ConstantOfShape, Shape, Range, Tile and Pad.
// Their rows are in ir/ops_model.cpp; model_impl() (model_ops.h) attaches these. Convolution,
// pooling and LRN are in model_ops_windows.cpp; the elementwise rows (pow, cast, clip, abs, ...)
// need none.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "model/model_ops.h"

namespace weft {
namespace {

using In = std::vector<const Tensor<double>*>;

// ---- Broadcasting, gathers, strided slices, expand, constants, shapes and casts

// The broadcast of two shapes aligned at the right (numpy's rule); a UserError otherwise.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t x = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    int64_t y = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    if (x != y && x != 1 && y != 1)
      throw UserError(
          fmt::format("{}: shapes {} and {} do not broadcast", op, shape_str(a), shape_str(b)));
    out[i] = x == 1 ? y : x;
  }
  return out;
}

// An index read from an index tensor: integral and within -extent..extent-1 (negative ones
// count from the end), else a UserError naming the operator, the element and the dim.
int64_t checked_index(double v, int64_t extent, int64_t element, size_t dim, const char* op) {
  if (!(v >= static_cast<double>(-extent) && v < static_cast<double>(extent)) || v != std::floor(v))
    throw UserError(fmt::format(
        "{} index {} (element {} of the indices) is out of range for dim {} of extent {} "
        "(valid: {}..{})",
        op, v, element, dim, extent, -extent, extent - 1));
  auto i = static_cast<int64_t>(v);
  return i < 0 ? i + extent : i;
}

MType infer_gather(DeduceContext& ctx, const std::vector<MType>& in, const MAttrs& attrs) {
  const MType &x = in[0], &idx = in[1];
  if (x.rank < 1) ctx.fail("gather needs a tensor of rank >= 1");
  auto axis = static_cast<size_t>(normalize_dim(ctx, sym_int(attrs, "axis"), x.rank, "axis"));
  int rank = x.rank - 1 + idx.rank;
  if (rank > kMaxModelRank) ctx.fail("gather's result rank is too large");
  if (!x.dims || !idx.dims) return MType::tensor_of_rank(x.dtype, rank);
  std::vector<SymExpr> out(x.dims->begin(), x.dims->begin() + static_cast<ptrdiff_t>(axis));
  out.insert(out.end(), idx.dims->begin(), idx.dims->end());
  out.insert(out.end(), x.dims->begin() + static_cast<ptrdiff_t>(axis) + 1, x.dims->end());
  return MType::tensor(x.dtype, out);
}

// ONNX Gather: entries of dim `axis` picked by integer indices (negative ones count from the end).
// Gather's rows of x (by its own element type: f32 or f64 values) into `out`.
template <class T, class Out>
void gather_rows(const T* x, const Shape& x_shape, int64_t axis, const std::vector<int64_t>& rows,
                 Out* out) {
  auto a = static_cast<size_t>(axis);
  int64_t extent = x_shape[a], outer = 1, inner = 1;
  for (size_t i = 0; i < a; ++i) outer *= x_shape[i];
  for (size_t i = a + 1; i < x_shape.size(); ++i) inner *= x_shape[i];
  auto n = static_cast<int64_t>(rows.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < n; ++i)
      std::copy_n(x + (o * extent + rows[static_cast<size_t>(i)]) * inner, inner,
                  out + (o * n + i) * inner);
}

// Gather on the f32 lane: the table (a model's embedding weights) read where it is.
Tensor<float> eval_gather_f32(const std::vector<HostOperand>& in, const Attrs& attrs) {
  const HostOperand &x = in[0], &ids = in[1];
  const Shape& xs = *x.shape;
  int64_t axis = attrs.get_int("axis");
  if (axis < 0) axis += static_cast<int64_t>(xs.size());
  auto a = static_cast<size_t>(axis);
  Shape shape(xs.begin(), xs.begin() + axis);
  shape.insert(shape.end(), ids.shape->begin(), ids.shape->end());
  shape.insert(shape.end(), xs.begin() + axis + 1, xs.end());
  std::vector<int64_t> rows;
  for (int64_t i = 0; i < ids.numel(); ++i)
    rows.push_back(checked_index(ids.at(i), xs[a], i, a, "gather"));
  Tensor<float> out(shape, 0.0f);
  if (x.f32)
    gather_rows(x.f32, xs, axis, rows, out.data.data());
  else
    gather_rows(x.f64, xs, axis, rows, out.data.data());
  return out;
}

Tensor<double> eval_gather(const In& in, const Attrs& attrs) {
  const Tensor<double>&x = *in[0], &ids = *in[1];
  auto r = static_cast<int64_t>(x.shape.size());
  int64_t axis = attrs.get_int("axis");
  if (axis < 0) axis += r;
  auto a = static_cast<size_t>(axis);
  int64_t extent = x.shape[a], outer = 1, inner = 1;
  for (size_t i = 0; i < a; ++i) outer *= x.shape[i];
  for (size_t i = a + 1; i < x.shape.size(); ++i) inner *= x.shape[i];
  Shape shape(x.shape.begin(), x.shape.begin() + axis);
  shape.insert(shape.end(), ids.shape.begin(), ids.shape.end());
  shape.insert(shape.end(), x.shape.begin() + axis + 1, x.shape.end());
  std::vector<int64_t> rows;
  for (int64_t i = 0; i < ids.numel(); ++i)
    rows.push_back(checked_index(ids.data[static_cast<size_t>(i)], extent, i, a, "gather"));
  Tensor<double> out(shape, 0.0);
  auto n = static_cast<int64_t>(rows.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < n; ++i)
      std::copy_n(x.data.begin() + (o * extent + rows[static_cast<size_t>(i)]) * inner, inner,
                  out.data.begin() + (o * n + i) * inner);
  return out;
}

MType infer_gather_elements(DeduceContext& ctx, const std::vector<MType>& in, const MAttrs& attrs) {
  const MType &x = in[0], &idx = in[1];
  if (x.rank < 1) ctx.fail("gather_elements needs a tensor of rank >= 1");
  if (idx.rank != x.rank)
    ctx.fail(fmt::format("gather_elements' indices have rank {}, the data rank {} (must be equal)",
                         idx.rank, x.rank));
  auto axis = normalize_dim(ctx, sym_int(attrs, "axis"), x.rank, "axis");
  if (!x.dims || !idx.dims) return MType::tensor_of_rank(x.dtype, x.rank);
  for (int i = 0; i < x.rank; ++i)
    if (i != axis)
      ctx.require_le((*idx.dims)[static_cast<size_t>(i)], (*x.dims)[static_cast<size_t>(i)],
                     fmt::format("gather_elements' indices dim {} within the data's", i));
  return MType::tensor(x.dtype, *idx.dims);
}

// ONNX GatherElements: out[i] is x at i with dim `axis` replaced by idx[i].
Tensor<double> eval_gather_elements(const In& in, const Attrs& attrs) {
  const Tensor<double>&x = *in[0], &ids = *in[1];
  auto r = static_cast<int64_t>(x.shape.size());
  int64_t axis = attrs.get_int("axis");
  auto a = static_cast<size_t>(axis < 0 ? axis + r : axis);
  std::vector<int64_t> stride(x.shape.size(), 1);
  for (size_t i = x.shape.size() - 1; i-- > 0;) stride[i] = stride[i + 1] * x.shape[i + 1];
  Tensor<double> out(ids.shape, 0.0);
  for_each_index(ids.shape, [&](int64_t o, const std::vector<int64_t>& idx) {
    int64_t src = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
      int64_t i = d == a ? checked_index(ids.data[static_cast<size_t>(o)], x.shape[a], o, a,
                                         "gather_elements")
                         : idx[d];
      src += i * stride[d];
    }
    out.data[static_cast<size_t>(o)] = x.data[static_cast<size_t>(src)];
  });
  return out;
}

MType infer_gather_nd(DeduceContext& ctx, const std::vector<MType>& in, const MAttrs& attrs) {
  const MType &x = in[0], &idx = in[1];
  int64_t b = const_int(ctx, sym_int(attrs, "batch_dims"), "gather_nd's batch_dims", 0);
  if (idx.rank < 1 || b >= std::min(x.rank, idx.rank))
    ctx.fail(
        fmt::format("gather_nd needs batch_dims ({}) below the ranks of data ({}) and "
                    "indices ({})",
                    b, x.rank, idx.rank));
  if (!x.dims || !idx.dims) ctx.fail("gather_nd needs the dims of its operands");
  int64_t m = const_int(ctx, idx.dims->back(), "gather_nd's index length (last dim)", 1);
  if (m > x.rank - b)  // not b + m: a hostile m would overflow
    ctx.fail(
        fmt::format("gather_nd's index length {} plus batch_dims {} exceeds the data's "
                    "rank {}",
                    m, b, x.rank));
  std::vector<SymExpr> out;
  for (int64_t i = 0; i < b; ++i) {
    auto u = static_cast<size_t>(i);
    ctx.require_eq((*idx.dims)[u], (*x.dims)[u], fmt::format("gather_nd's batch dim {}", i));
    out.push_back((*x.dims)[u]);
  }
  out.insert(out.end(), idx.dims->begin() + b, idx.dims->end() - 1);
  out.insert(out.end(), x.dims->begin() + b + m, x.dims->end());
  if (out.empty() || static_cast<int>(out.size()) > kMaxModelRank)
    ctx.fail("gather_nd's result must have a rank between 1 and the model limit");
  return MType::tensor(x.dtype, out);
}

// ONNX GatherND: each index tuple of m values picks a slice of x (within its batch).
Tensor<double> eval_gather_nd(const In& in, const Attrs& attrs) {
  const Tensor<double>&x = *in[0], &ids = *in[1];
  auto b = static_cast<size_t>(attrs.get_int("batch_dims"));
  auto m = static_cast<size_t>(ids.shape.back());
  int64_t batches = 1, inner = 1;
  for (size_t i = 0; i < b; ++i) batches *= x.shape[i];
  for (size_t i = b + m; i < x.shape.size(); ++i) inner *= x.shape[i];
  int64_t per_batch = numel(x.shape) / batches;
  int64_t tuples = numel(ids.shape) / static_cast<int64_t>(m) / batches;
  Shape shape(x.shape.begin(), x.shape.begin() + static_cast<ptrdiff_t>(b));
  shape.insert(shape.end(), ids.shape.begin() + static_cast<ptrdiff_t>(b), ids.shape.end() - 1);
  shape.insert(shape.end(), x.shape.begin() + static_cast<ptrdiff_t>(b + m), x.shape.end());
  Tensor<double> out(shape, 0.0);
  for (int64_t t = 0; t < batches * tuples; ++t) {
    int64_t src = 0;
    for (size_t j = 0; j < m; ++j) {
      auto e = t * static_cast<int64_t>(m) + static_cast<int64_t>(j);
      src = src * x.shape[b + j] +
            checked_index(ids.data[static_cast<size_t>(e)], x.shape[b + j], e, b + j, "gather_nd");
    }
    auto from = x.data.begin() + (t / tuples) * per_batch + src * inner;
    std::copy_n(from, inner, out.data.begin() + t * inner);
  }
  return out;
}

MType infer_scatter_nd(DeduceContext& ctx, const std::vector<MType>& in, const MAttrs& attrs) {
  const MType &x = in[0], &idx = in[1], &u = in[2];
  if (const_int(ctx, sym_int(attrs, "reduction"), "scatter_nd's reduction", 0) > 4)
    ctx.fail("scatter_nd's reduction must be 0 (none), 1 (add), 2 (mul), 3 (max) or 4 (min)");
  if (u.dtype != x.dtype)
    ctx.fail(fmt::format("scatter_nd's updates are {} and its data {}; they must have one dtype",
                         dtype_name(u.dtype), dtype_name(x.dtype)));
  if (!x.dims || !idx.dims || !u.dims) ctx.fail("scatter_nd needs the dims of its operands");
  const int64_t k = const_int(ctx, idx.dims->back(), "scatter_nd's index length (last dim)", 1);
  if (k > x.rank)
    ctx.fail(fmt::format("scatter_nd's index length {} exceeds the data's rank {}", k, x.rank));
  std::vector<SymExpr> want(idx.dims->begin(), idx.dims->end() - 1);
  want.insert(want.end(), x.dims->begin() + k, x.dims->end());
  if (static_cast<size_t>(u.rank) != want.size())
    ctx.fail(fmt::format("scatter_nd's updates have rank {}; indices and data make it {}", u.rank,
                         want.size()));
  for (size_t i = 0; i < want.size(); ++i)
    ctx.require_eq((*u.dims)[i], want[i], fmt::format("scatter_nd's updates dim {}", i));
  return x;
}

// ONNX ScatterND: a copy of the data, each index tuple's slice replaced (or reduced) by its
// updates in order.
Tensor<double> eval_scatter_nd(const In& in, const Attrs& attrs) {
  const Tensor<double>&x = *in[0], &ids = *in[1], &u = *in[2];
  const int64_t reduction = attrs.get_int("reduction");
  const auto k = static_cast<size_t>(ids.shape.back());
  int64_t inner = 1;
  for (size_t i = k; i < x.shape.size(); ++i) inner *= x.shape[i];
  const int64_t tuples = numel(ids.shape) / static_cast<int64_t>(k);
  Tensor<double> out = x;
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t at = 0;
    for (size_t j = 0; j < k; ++j) {
      const auto e = t * static_cast<int64_t>(k) + static_cast<int64_t>(j);
      at = at * x.shape[j] +
           checked_index(ids.data[static_cast<size_t>(e)], x.shape[j], e, j, "scatter_nd");
    }
    for (int64_t i = 0; i < inner; ++i) {
      double& o = out.data[static_cast<size_t>(at * inner + i)];
      const double v = u.data[static_cast<size_t>(t * inner + i)];
      o = reduction == 0   ? v
          : reduction == 1 ? o + v
          : reduction == 2 ? o * v
          : reduction == 3 ? std::max(o, v)
                           : std::min(o, v);
    }
  }
  return out;
}

SymExpr lo_of(const SymExpr& a, const SymExpr& b) {
  return min(a, b);
}
SymExpr hi_of(const SymExpr& a, const SymExpr& b) {
  return max(a, b);
}
SymExpr div_floor(const SymExpr& a, int64_t b) {
  return floordiv(a, SymExpr(b));
}
int64_t lo_of(int64_t a, int64_t b) {
  return std::min(a, b);
}
int64_t hi_of(int64_t a, int64_t b) {
  return std::max(a, b);
}
int64_t div_floor(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

// One axis of ONNX Slice: start and end as ONNX normalizes them (negative: from the end; then
// clamped to [0, dim] for a positive step, to [0, dim - 1] and [-1, dim - 1] for a negative one)
// and the number of entries taken. `*_negative`: the written value is below 0.
template <class T>
std::pair<T, T> slice_axis(const T& start, bool start_negative, const T& end, bool end_negative,
                           int64_t step, const T& dim) {
  T s = start_negative ? start + dim : start, e = end_negative ? end + dim : end;
  if (step > 0) {
    s = hi_of(T(0), lo_of(s, dim));
    e = hi_of(T(0), lo_of(e, dim));
    return {s, hi_of(T(0), div_floor(e - s + step - 1, step))};
  }
  s = hi_of(T(0), lo_of(s, dim - 1));
  e = hi_of(T(-1), lo_of(e, dim - 1));
  return {s, hi_of(T(0), div_floor(s - e - step - 1, -step))};
}

// The sliced axes and their steps, checked: one entry per start, distinct axes, nonzero steps.
std::vector<std::pair<int64_t, int64_t>> slice_axes(DeduceContext& ctx, const MAttrs& attrs,
                                                    int rank) {
  const auto &starts = sym_list(attrs, "starts"), &ends = sym_list(attrs, "ends"),
             &axes = sym_list(attrs, "axes"), &steps = sym_list(attrs, "steps");
  size_t n = starts.size();
  if (ends.size() != n || (!axes.empty() && axes.size() != n) ||
      (!steps.empty() && steps.size() != n))
    ctx.fail(
        fmt::format("slice_steps has {} starts, {} ends, {} axes and {} steps; they must "
                    "agree (axes and steps may be empty)",
                    n, ends.size(), axes.size(), steps.size()));
  std::vector<std::pair<int64_t, int64_t>> out;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < n; ++i) {
    int64_t axis =
        axes.empty() ? static_cast<int64_t>(i) : normalize_dim(ctx, axes[i], rank, "axes entry");
    if (axis >= rank || seen[static_cast<size_t>(axis)])
      ctx.fail(fmt::format("slice_steps' axes must be distinct dims of the rank-{} operand", rank));
    seen[static_cast<size_t>(axis)] = true;
    int64_t step = 1;
    if (!steps.empty()) {
      auto c = steps[i].as_constant();
      if (!c || *c == 0)
        ctx.fail(
            fmt::format("slice_steps' steps must be nonzero integers, not {}", steps[i].str()));
      step = *c;
    }
    out.emplace_back(axis, step);
  }
  return out;
}

MType infer_slice_steps(DeduceContext& ctx, const std::vector<MType>& in, const MAttrs& attrs) {
  const MType& x = in[0];
  auto axes = slice_axes(ctx, attrs, x.rank);
  const auto &starts = sym_list(attrs, "starts"), &ends = sym_list(attrs, "ends");
  auto negative = [&](const SymExpr& e, const char* what) {
    auto c = e.as_constant();
    if (!c) ctx.require_le(0, e, fmt::format("a symbolic slice_steps {} to be >= 0", what));
    return c && *c < 0;
  };
  std::vector<bool> neg_start, neg_end;
  for (size_t i = 0; i < axes.size(); ++i) {
    neg_start.push_back(negative(starts[i], "start"));
    neg_end.push_back(negative(ends[i], "end"));
  }
  if (!x.dims) return x;
  std::vector<SymExpr> out = *x.dims;
  for (size_t i = 0; i < axes.size(); ++i) {
    auto [axis, step] = axes[i];
    auto& d = out[static_cast<size_t>(axis)];
    d = slice_axis(starts[i], neg_start[i], ends[i], neg_end[i], step, d).second;
  }
  return MType::tensor(x.dtype, out);
}

Tensor<double> eval_slice_steps(const In& in, const Attrs& attrs) {
  const Tensor<double>& x = *in[0];
  Shape shape;
  // Per dim: the first element taken and the step between taken elements.
  auto take = slice_steps_take(x.shape, attrs, shape);
  auto strides = strides_of(x.shape);
  Tensor<double> out(shape, 0.0);
  for_each_index(shape, [&](int64_t o, const std::vector<int64_t>& idx) {
    int64_t src = 0;
    for (size_t i = 0; i < x.shape.size(); ++i)
      src += (take[i].first + idx[i] * take[i].second) * strides[i];
    out.data[static_cast<size_t>(o)] = x.data[static_cast<size_t>(src)];
  });
  return out;
}

MType infer_expand(DeduceContext& ctx, const std::vector<MType>& in, const MAttrs& attrs) {
  const MType& x = in[0];
  const auto& shape = sym_list(attrs, "shape");
  for (const SymExpr& d : shape) ctx.require_le(0, d, "expand's shape entries to be >= 0");
  auto rank = std::max(static_cast<size_t>(x.rank), shape.size());
  if (rank > static_cast<size_t>(kMaxModelRank)) ctx.fail("expand's result rank is too large");
  if (!x.dims) return MType::tensor_of_rank(x.dtype, static_cast<int>(rank));
  std::vector<SymExpr> out;
  for (size_t i = 0; i < rank; ++i) {
    size_t xl = rank - x.dims->size(), sl = rank - shape.size();
    SymExpr a = i < xl ? SymExpr(1) : (*x.dims)[i - xl];
    SymExpr b = i < sl ? SymExpr(1) : shape[i - sl];
    out.push_back(broadcast_dim(ctx, a, b, i));
  }
  return MType::tensor(x.dtype, out);
}

Tensor<double> eval_expand(const In& in, const Attrs& attrs) {
  const Tensor<double>& x = *in[0];
  Shape shape = broadcast_shapes(x.shape, attrs.get_list("shape"), "expand");
  auto sx = broadcast_strides(x.shape, shape);
  Tensor<double> out(shape, 0.0);
  for_each_index(shape, [&](int64_t o, const std::vector<int64_t>& idx) {
    int64_t a = 0;
    for (size_t i = 0; i < idx.size(); ++i) a += idx[i] * sx[i];
    out.data[static_cast<size_t>(o)] = x.data[static_cast<size_t>(a)];
  });
  return out;
}

MType infer_fill(DeduceContext& ctx, const std::vector<MType>&, const MAttrs& attrs) {
  const auto& shape = sym_list(attrs, "shape");
  for (const SymExpr& d : shape) ctx.require_le(0, d, "fill's shape entries to be >= 0");
  return MType::tensor(DType::f32, shape);
}

Tensor<double> eval_fill(const In&, const Attrs& attrs) {
  return Tensor<double>(attrs.get_list("shape"), attrs.get_rational("value").to_double());
}

MType infer_dims_tensor(DeduceContext&, const std::vector<MType>&, const MAttrs& attrs) {
  return MType::tensor(DType::i64,
                       {SymExpr(static_cast<int64_t>(sym_list(attrs, "values").size()))});
}

Tensor<double> eval_dims_tensor(const In&, const Attrs& attrs) {
  const auto& v = attrs.get_list("values");
  return Tensor<double>({static_cast<int64_t>(v.size())}, std::vector<double>(v.begin(), v.end()));
}

// ---- range, tile, pad

MType infer_range(DeduceContext& ctx, const std::vector<MType>&, const MAttrs& attrs) {
  auto delta = sym_int(attrs, "delta").as_constant();
  if (!delta || *delta == 0) ctx.fail("range's delta must be a nonzero integer");
  SymExpr span = sym_int(attrs, "limit") - sym_int(attrs, "start");
  if (*delta < 0) span = -span;
  int64_t step = std::abs(*delta);
  return MType::tensor(DType::i64, {max(SymExpr(0), floordiv(span + (step - 1), SymExpr(step)))});
}

Tensor<double> eval_range(const In&, const Attrs& attrs) {
  int64_t start = attrs.get_int("start"), limit = attrs.get_int("limit"),
          delta = attrs.get_int("delta");
  int64_t span = delta > 0 ? limit - start : start - limit, step = std::abs(delta);
  int64_t n = span <= 0 ? 0 : (span + step - 1) / step;
  Tensor<double> out({n}, 0.0);
  for (int64_t i = 0; i < n; ++i)
    out.data[static_cast<size_t>(i)] = static_cast<double>(start + i * delta);
  return out;
}

MType infer_tile(DeduceContext& ctx, const std::vector<MType>& in, const MAttrs& attrs) {
  const MType& x = in[0];
  const auto& reps = sym_list(attrs, "repeats");
  if (reps.size() != static_cast<size_t>(x.rank))
    ctx.fail(fmt::format("tile has {} repeats for a tensor of rank {}", reps.size(), x.rank));
  for (const SymExpr& r : reps) ctx.require_le(0, r, "tile's repeats to be >= 0");
  if (!x.dims) return x;
  std::vector<SymExpr> out;
  for (size_t i = 0; i < reps.size(); ++i) out.push_back((*x.dims)[i] * reps[i]);
  return MType::tensor(x.dtype, out);
}

Tensor<double> eval_tile(const In& in, const Attrs& attrs) {
  const Tensor<double>& x = *in[0];
  const auto& reps = attrs.get_list("repeats");
  Shape shape = x.shape;
  for (size_t i = 0; i < shape.size(); ++i) shape[i] *= reps[i];
  auto strides = strides_of(x.shape);
  Tensor<double> out(shape, 0.0);
  for_each_index(shape, [&](int64_t o, const std::vector<int64_t>& idx) {
    int64_t src = 0;
    for (size_t i = 0; i < idx.size(); ++i) src += idx[i] % x.shape[i] * strides[i];
    out.data[static_cast<size_t>(o)] = x.data[static_cast<size_t>(src)];
  });
  return out;
}

MType infer_pad(DeduceContext& ctx, const std::vector<MType>& in, const MAttrs& attrs) {
  const MType& x = in[0];
  const auto& pads = sym_list(attrs, "pads");
  auto r = static_cast<size_t>(x.rank);
  if (pads.size() != 2 * r)
    ctx.fail(fmt::format("pad has {} pads for a tensor of rank {} (it needs {}: begins, then ends)",
                         pads.size(), x.rank, 2 * r));
  if (!x.dims) return x;
  std::vector<SymExpr> out;
  for (size_t i = 0; i < r; ++i) {
    out.push_back((*x.dims)[i] + pads[i] + pads[i + r]);
    ctx.require_le(0, out.back(), fmt::format("pad's result dim {} to be >= 0", i));
  }
  return MType::tensor(x.dtype, out);
}

// Constant padding; negative pads crop (ONNX).
Tensor<double> eval_pad(const In& in, const Attrs& attrs) {
  const Tensor<double>& x = *in[0];
  const auto& pads = attrs.get_list("pads");
  size_t r = x.shape.size();
  Shape shape = x.shape;
  for (size_t i = 0; i < r; ++i) {
    shape[i] += pads[i] + pads[i + r];
    if (shape[i] < 0)
      throw UserError(fmt::format("pad: dim {} of {} cropped below 0", i, shape_str(x.shape)));
  }
  auto strides = strides_of(x.shape);
  Tensor<double> out(shape, attrs.get_rational("value").to_double());
  for_each_index(shape, [&](int64_t o, const std::vector<int64_t>& idx) {
    int64_t src = 0;
    for (size_t i = 0; i < r; ++i) {
      int64_t at = idx[i] - pads[i];
      if (at < 0 || at >= x.shape[i]) return;
      src += at * strides[i];
    }
    out.data[static_cast<size_t>(o)] = x.data[static_cast<size_t>(src)];
  });
  return out;
}

}  // namespace

// Strides to read `operand` at the indices of a tensor of shape `out`: dims aligned at the
// right, stride 0 where the operand's dim is 1 or missing.
std::vector<int64_t> broadcast_strides(const Shape& operand, const Shape& out) {
  std::vector<int64_t> strides(out.size(), 0);
  auto own = strides_of(operand);
  size_t lead = out.size() - operand.size();
  for (size_t i = 0; i < operand.size(); ++i)
    if (operand[i] != 1) strides[lead + i] = own[i];
  return strides;
}

std::vector<std::pair<int64_t, int64_t>> slice_steps_take(const Shape& x, const Attrs& attrs,
                                                          Shape& shape) {
  size_t r = x.size();
  const auto &starts = attrs.get_list("starts"), &ends = attrs.get_list("ends"),
             &axes = attrs.get_list("axes"), &steps = attrs.get_list("steps");
  std::vector<std::pair<int64_t, int64_t>> take(r, {0, 1});
  shape = x;
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t a = axes.empty() ? static_cast<int64_t>(i) : axes[i];
    auto axis = static_cast<size_t>(a < 0 ? a + static_cast<int64_t>(r) : a);
    take[axis].second = steps.empty() ? 1 : steps[i];
    std::tie(take[axis].first, shape[axis]) =
        slice_axis(starts[i], starts[i] < 0, ends[i], ends[i] < 0, take[axis].second, x[axis]);
  }
  return take;
}

std::vector<std::pair<OpKind, ModelOpImpl>> onnx_model_op_impls() {
  using K = OpKind;
  return {
      {K::gather, {infer_gather, eval_gather, nullptr, eval_gather_f32}},
      {K::gather_elements, {infer_gather_elements, eval_gather_elements}},
      {K::gather_nd, {infer_gather_nd, eval_gather_nd}},
      {K::scatter_nd, {infer_scatter_nd, eval_scatter_nd}},
      {K::slice_steps, {infer_slice_steps, eval_slice_steps}},
      {K::expand, {infer_expand, eval_expand}},
      {K::fill, {infer_fill, eval_fill}},
      {K::dims_tensor, {infer_dims_tensor, eval_dims_tensor}},
      {K::range, {infer_range, eval_range}},
      {K::tile, {infer_tile, eval_tile}},
      {K::pad, {infer_pad, eval_pad}},
  };
}

}  // namespace weft
