// The implementations of the model-only operators for ONNX's operators beyond the transformer set
// (issue 15): convolution, pooling, LRN, pow, gather, strided slices, expand, ConstantOfShape,
// Shape and Cast. Their rows are in ir/ops_model.cpp; model_impl() (model_ops.h) attaches these.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "model/model_ops.h"
#include "core/dtype_convert.h"

namespace weft {
namespace {

using In = std::vector<const Tensor<double>*>;

const std::vector<SymExpr>& sym_list(const MAttrs& attrs, const char* name) {
  return std::get<std::vector<SymExpr>>(attrs.at(name));
}
const SymExpr& sym_int(const MAttrs& attrs, const char* name) {
  return std::get<SymExpr>(attrs.at(name));
}

// An integer attribute that must be a constant >= lo.
int64_t const_int(DeduceContext& ctx, const SymExpr& e, const std::string& what, int64_t lo) {
  auto c = e.as_constant();
  if (!c || *c < lo) ctx.fail(fmt::format("{}={} must be an integer >= {}", what, e.str(), lo));
  return *c;
}

// ---- Convolution and pooling: [N, C, *spatial] with 1 to 3 spatial dims

// The window attributes of one call, per spatial dim (symbolic: pads may be symbolic, strides,
// dilations and pooling kernels are constants).
struct SymWindows {
  std::vector<SymExpr> kernel, pad_begin, pad_end;
  std::vector<int64_t> stride, dilation;
};

// Reads strides/pads/dilations (empty lists: 1, 0, 1) for `rank` spatial dims.
SymWindows read_windows(DeduceContext& ctx, const MAttrs& attrs, const char* op, int rank,
                        bool has_dilations) {
  SymWindows w;
  auto list = [&](const char* name, size_t n) -> const std::vector<SymExpr>* {
    const auto& l = sym_list(attrs, name);
    if (l.empty()) return nullptr;
    if (l.size() != n)
      ctx.fail(fmt::format("{}'s {} has {} entries; {} spatial dims need {}", op, name, l.size(),
                           rank, n));
    return &l;
  };
  auto r = static_cast<size_t>(rank);
  const auto* strides = list("strides", r);
  const auto* pads = list("pads", 2 * r);
  const auto* dilations = has_dilations ? list("dilations", r) : nullptr;
  for (size_t i = 0; i < r; ++i) {
    w.stride.push_back(strides ? const_int(ctx, (*strides)[i], fmt::format("strides[{}]", i), 1)
                               : 1);
    w.dilation.push_back(
        dilations ? const_int(ctx, (*dilations)[i], fmt::format("dilations[{}]", i), 1) : 1);
    for (int end = 0; end < 2; ++end) {
      SymExpr p = pads ? (*pads)[i + (end ? r : 0)] : SymExpr(0);
      ctx.require_le(0, p, fmt::format("{}'s pads to be >= 0", op));
      (end ? w.pad_end : w.pad_begin).push_back(p);
    }
  }
  return w;
}

// The output extents of the windows over `in` (the spatial dims): ONNX's formula, and with
// ceil_mode the last window kept only when it starts inside the input or its left padding.
std::vector<SymExpr> window_extents(DeduceContext& ctx, const SymWindows& w,
                                    const std::vector<SymExpr>& in, bool ceil_mode,
                                    const char* op) {
  std::vector<SymExpr> out;
  for (size_t i = 0; i < in.size(); ++i) {
    SymExpr span = w.dilation[i] * (w.kernel[i] - 1) + 1;
    SymExpr padded = in[i] + w.pad_begin[i] + w.pad_end[i];
    ctx.require_le(span, padded,
                   fmt::format("{}'s window (dilation * (kernel - 1) + 1) to fit the padded "
                               "spatial dim {}",
                               op, i));
    SymExpr s(w.stride[i]);
    if (!ceil_mode) {
      out.push_back(floordiv(padded - span, s) + 1);
    } else {
      SymExpr ceil = floordiv(padded - span + s - 1, s) + 1;
      out.push_back(min(ceil, floordiv(in[i] + w.pad_begin[i] - 1, s) + 1));
    }
  }
  return out;
}

int spatial_rank(DeduceContext& ctx, const MType& x, const char* op) {
  if (x.rank < 3 || x.rank > 5)
    ctx.fail(
        fmt::format("{} needs [N, C, *spatial] with 1 to 3 spatial dims, got {}", op, x.str()));
  return x.rank - 2;
}

std::vector<SymExpr> spatial_dims(const MType& t) {
  return {t.dims->begin() + 2, t.dims->end()};
}

MType infer_conv(DeduceContext& ctx, const std::vector<MType>& in, const MAttrs& attrs) {
  const MType &x = in[0], &w = in[1];
  int r = spatial_rank(ctx, x, "conv");
  if (w.rank != x.rank)
    ctx.fail(fmt::format("conv's weight {} must be [M, C/group, *kernel] of rank {} like x {}",
                         w.str(), x.rank, x.str()));
  if (x.dtype != w.dtype)
    ctx.fail(fmt::format("conv's x and weight are {} and {}; they must have the same dtype",
                         dtype_name(x.dtype), dtype_name(w.dtype)));
  int64_t group = const_int(ctx, sym_int(attrs, "group"), "group", 1);
  SymWindows win = read_windows(ctx, attrs, "conv", r, true);
  if (!x.dims || !w.dims) return MType::tensor_of_rank(x.dtype, x.rank);
  const auto &xd = *x.dims, &wd = *w.dims;
  ctx.require_eq(xd[1], wd[1] * group, "conv's input channels to be group * the weight's dim 1");
  ctx.require_eq(floormod(wd[0], SymExpr(group)), 0,
                 "conv's output channels (weight dim 0) to be divisible by group");
  win.kernel = spatial_dims(w);
  for (const SymExpr& k : win.kernel) ctx.require_le(1, k, "conv's kernel dims to be >= 1");
  std::vector<SymExpr> out = {xd[0], wd[0]};
  for (SymExpr& e : window_extents(ctx, win, spatial_dims(x), false, "conv"))
    out.push_back(std::move(e));
  return MType::tensor(x.dtype, out);
}

MType infer_pool(DeduceContext& ctx, const std::vector<MType>& in, const MAttrs& attrs,
                 const char* op, bool has_dilations) {
  const MType& x = in[0];
  int r = spatial_rank(ctx, x, op);
  SymWindows win = read_windows(ctx, attrs, op, r, has_dilations);
  const auto& kernel = sym_list(attrs, "kernel");
  if (kernel.size() != static_cast<size_t>(r))
    ctx.fail(fmt::format("{}'s kernel has {} entries for {} spatial dims", op, kernel.size(), r));
  for (size_t i = 0; i < kernel.size(); ++i)
    win.kernel.push_back(const_int(ctx, kernel[i], fmt::format("kernel[{}]", i), 1));
  int64_t ceil_mode = const_int(ctx, sym_int(attrs, "ceil_mode"), "ceil_mode", 0);
  if (ceil_mode > 1) ctx.fail(fmt::format("{}'s ceil_mode must be 0 or 1", op));
  if (attrs.count("count_include_pad")) {
    int64_t c = const_int(ctx, sym_int(attrs, "count_include_pad"), "count_include_pad", 0);
    if (c > 1) ctx.fail(fmt::format("{}'s count_include_pad must be 0 or 1", op));
  }
  if (!x.dims) return x;
  std::vector<SymExpr> out = {(*x.dims)[0], (*x.dims)[1]};
  for (SymExpr& e : window_extents(ctx, win, spatial_dims(x), ceil_mode == 1, op))
    out.push_back(std::move(e));
  return MType::tensor(x.dtype, out);
}

MType infer_max_pool(DeduceContext& ctx, const std::vector<MType>& in, const MAttrs& attrs) {
  return infer_pool(ctx, in, attrs, "max_pool", true);
}
MType infer_avg_pool(DeduceContext& ctx, const std::vector<MType>& in, const MAttrs& attrs) {
  return infer_pool(ctx, in, attrs, "avg_pool", true);
}
MType infer_max_pool_indices(DeduceContext& ctx, const std::vector<MType>& in,
                             const MAttrs& attrs) {
  return infer_pool(ctx, in, attrs, "max_pool_indices", true);
}

MType infer_global_pool(DeduceContext& ctx, const std::vector<MType>& in, const MAttrs&) {
  const MType& x = in[0];
  if (x.rank < 3)
    ctx.fail(
        fmt::format("a global pool needs [N, C, *spatial] with spatial dims, got {}", x.str()));
  if (!x.dims) return x;
  std::vector<SymExpr> out = {(*x.dims)[0], (*x.dims)[1]};
  out.resize(static_cast<size_t>(x.rank), SymExpr(1));
  return MType::tensor(x.dtype, out);
}

Shape pooled_shape(const Shape& x, int64_t channels, const Windows3& w) {
  Shape out = {x[0], channels};
  for (size_t i = 5 - x.size(); i < 3; ++i) out.push_back(w.out[i]);
  return out;
}

// The rows of im2col for one image and channel group: col[(c, kd, kh, kw)][(od, oh, ow)], zero
// where the tap falls into padding.
void im2col(const double* x, int64_t channels, const Windows3& w, double* col) {
  int64_t p = w.out_size();
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t kd = 0; kd < w.k[0]; ++kd)
      for (int64_t kh = 0; kh < w.k[1]; ++kh)
        for (int64_t kw = 0; kw < w.k[2]; ++kw) {
          double* dst = col + (((c * w.k[0] + kd) * w.k[1] + kh) * w.k[2] + kw) * p;
          const double* plane = x + c * w.in_size();
          // The output columns whose tap is inside the row: ow in [lo, hi).
          int64_t off = kw * w.d[2] - w.pb[2];
          int64_t lo = off >= 0 ? 0 : (-off + w.s[2] - 1) / w.s[2];
          int64_t hi = w.in[2] - off <= 0 ? 0 : (w.in[2] - off - 1) / w.s[2] + 1;
          hi = std::clamp<int64_t>(hi, 0, w.out[2]);
          lo = std::min(lo, hi);
          for (int64_t od = 0; od < w.out[0]; ++od) {
            int64_t id = od * w.s[0] - w.pb[0] + kd * w.d[0];
            for (int64_t oh = 0; oh < w.out[1]; ++oh, dst += w.out[2]) {
              int64_t ih = oh * w.s[1] - w.pb[1] + kh * w.d[1];
              if (id < 0 || id >= w.in[0] || ih < 0 || ih >= w.in[1]) {
                std::fill_n(dst, w.out[2], 0.0);
                continue;
              }
              const double* row = plane + (id * w.in[1] + ih) * w.in[2];
              std::fill_n(dst, lo, 0.0);
              if (w.s[2] == 1)
                std::copy(row + lo + off, row + hi + off, dst + lo);
              else
                for (int64_t ow = lo; ow < hi; ++ow) dst[ow] = row[ow * w.s[2] + off];
              std::fill(dst + hi, dst + w.out[2], 0.0);
            }
          }
        }
}

// Rows m..m+R of out (R = 4 or 1) accumulate a[m.., k] * b[k, j0..j0+n) for k in [k0, k1).
// `Fixed` > 0: n is that constant, so the compiler's cheapest vectorizer (-O2) takes the loop.
template <int R, int64_t Fixed>
void accumulate_rows(const double* a, const double* b, double* out, int64_t depth, int64_t cols,
                     int64_t k0, int64_t k1, int64_t j0, int64_t n) {
  static_assert(R == 1 || R == 4);
  if constexpr (Fixed > 0) n = Fixed;
  double* __restrict o0 = out + j0;
  for (int64_t k = k0; k < k1; ++k) {
    const double* __restrict bk = b + k * cols + j0;
    if constexpr (R == 4) {
      double* __restrict o1 = o0 + cols;
      double* __restrict o2 = o1 + cols;
      double* __restrict o3 = o2 + cols;
      double w0 = a[k], w1 = a[depth + k], w2 = a[2 * depth + k], w3 = a[3 * depth + k];
      for (int64_t j = 0; j < n; ++j) {
        double v = bk[j];
        o0[j] += w0 * v;
        o1[j] += w1 * v;
        o2[j] += w2 * v;
        o3[j] += w3 * v;
      }
    } else {
      double w0 = a[k];
      for (int64_t j = 0; j < n; ++j) o0[j] += w0 * bk[j];
    }
  }
}

// out[m][j] = sum_k a[m][k] * b[k][j] (out zeroed by the caller), blocked so a tile of b stays
// in cache while four rows of out take it at once.
void gemm_accumulate(const double* a, const double* b, double* out, int64_t rows, int64_t depth,
                     int64_t cols) {
  constexpr int64_t kCols = 256, kDepth = 128;
  for (int64_t j0 = 0; j0 < cols; j0 += kCols) {
    int64_t jn = std::min(kCols, cols - j0);
    for (int64_t k0 = 0; k0 < depth; k0 += kDepth) {
      int64_t k1 = std::min(depth, k0 + kDepth), m = 0;
      for (; m + 4 <= rows; m += 4) {
        const double* am = a + m * depth;
        double* om = out + m * cols;
        if (jn == kCols)
          accumulate_rows<4, kCols>(am, b, om, depth, cols, k0, k1, j0, jn);
        else
          accumulate_rows<4, 0>(am, b, om, depth, cols, k0, k1, j0, jn);
      }
      for (; m < rows; ++m)
        accumulate_rows<1, 0>(a + m * depth, b, out + m * cols, depth, cols, k0, k1, j0, jn);
    }
  }
}

Tensor<double> eval_conv(const In& in, const Attrs& attrs) {
  const Tensor<double>&x = *in[0], &wt = *in[1];
  int64_t group = attrs.get_int("group");
  int64_t n = x.shape[0], c = x.shape[1], m = wt.shape[0], cg = wt.shape[1];
  if (c != cg * group || m % group != 0)
    throw UserError(fmt::format("conv: x {} and weight {} do not agree for group={}",
                                shape_str(x.shape), shape_str(wt.shape), group));
  Windows3 w =
      concrete_windows(x.shape, {wt.shape.begin() + 2, wt.shape.end()}, attrs, false, "conv");
  Tensor<double> out(pooled_shape(x.shape, m, w), 0.0);
  int64_t mg = m / group, depth = cg * w.k_size(), p = w.out_size();
  // A 1x1 window with unit strides and no padding reads x as it is: no im2col.
  bool direct = w.k_size() == 1 && w.s[0] * w.s[1] * w.s[2] == 1 &&
                w.pb[0] + w.pb[1] + w.pb[2] + w.pe[0] + w.pe[1] + w.pe[2] == 0;
  std::vector<double> col(direct ? 0 : static_cast<size_t>(depth * p));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t g = 0; g < group; ++g) {
      const double* xg = x.data.data() + (i * c + g * cg) * w.in_size();
      if (!direct) im2col(xg, cg, w, col.data());
      gemm_accumulate(wt.data.data() + g * mg * depth, direct ? xg : col.data(),
                      out.data.data() + (i * m + g * mg) * p, mg, depth, p);
    }
  return out;
}

enum class PoolKind : uint8_t { max, avg, argmax };

// Visits the taps of output position (od, oh, ow): fn(offset in the plane) for taps inside the
// input; returns the number of taps inside the padded extent (avg's count_include_pad divisor).
template <class Fn>
int64_t for_each_tap(const Windows3& w, const int64_t o[3], Fn&& fn) {
  int64_t lo[3], hi[3], padded = 1;
  for (int i = 0; i < 3; ++i) {
    int64_t start = o[i] * w.s[i] - w.pb[i];
    int64_t in_pad = 0;
    for (int64_t t = 0; t < w.k[i]; ++t) {
      int64_t pos = start + t * w.d[i];
      if (pos >= -w.pb[i] && pos < w.in[i] + w.pe[i]) ++in_pad;
    }
    padded *= in_pad;
    lo[i] = start;
    hi[i] = w.k[i];
  }
  for (int64_t a = 0; a < hi[0]; ++a) {
    int64_t id = lo[0] + a * w.d[0];
    if (id < 0 || id >= w.in[0]) continue;
    for (int64_t b = 0; b < hi[1]; ++b) {
      int64_t ih = lo[1] + b * w.d[1];
      if (ih < 0 || ih >= w.in[1]) continue;
      for (int64_t e = 0; e < hi[2]; ++e) {
        int64_t iw = lo[2] + e * w.d[2];
        if (iw >= 0 && iw < w.in[2]) fn((id * w.in[1] + ih) * w.in[2] + iw);
      }
    }
  }
  return padded;
}

Tensor<double> eval_pool(const In& in, const Attrs& attrs, PoolKind kind) {
  const Tensor<double>& x = *in[0];
  const char* op = kind == PoolKind::avg ? "avg_pool" : "max_pool";
  Windows3 w = concrete_windows(x.shape, attrs.get_list("kernel"), attrs,
                                attrs.get_int("ceil_mode") == 1, op);
  bool include_pad = kind == PoolKind::avg && attrs.get_int("count_include_pad") == 1;
  Tensor<double> out(pooled_shape(x.shape, x.shape[1], w), 0.0);
  int64_t planes = x.shape[0] * x.shape[1];
  double* dst = out.data.data();
  for (int64_t pl = 0; pl < planes; ++pl) {
    const double* plane = x.data.data() + pl * w.in_size();
    int64_t o[3];
    for (o[0] = 0; o[0] < w.out[0]; ++o[0])
      for (o[1] = 0; o[1] < w.out[1]; ++o[1])
        for (o[2] = 0; o[2] < w.out[2]; ++o[2]) {
          double acc = kind == PoolKind::avg ? 0.0 : -std::numeric_limits<double>::infinity();
          int64_t count = 0, best = -1;
          int64_t padded = for_each_tap(w, o, [&](int64_t at) {
            double v = plane[at];
            ++count;
            if (kind == PoolKind::avg) {
              acc += v;
            } else if (best < 0 || v > acc) {
              acc = v;
              best = at;
            }
          });
          if (kind == PoolKind::avg)
            acc /= static_cast<double>(include_pad ? padded : count);
          else if (kind == PoolKind::argmax)
            acc = static_cast<double>(best < 0 ? -1 : pl * w.in_size() + best);
          *dst++ = acc;
        }
  }
  return out;
}

Tensor<double> eval_max_pool(const In& in, const Attrs& attrs) {
  return eval_pool(in, attrs, PoolKind::max);
}
Tensor<double> eval_avg_pool(const In& in, const Attrs& attrs) {
  return eval_pool(in, attrs, PoolKind::avg);
}
Tensor<double> eval_max_pool_indices(const In& in, const Attrs& attrs) {
  return eval_pool(in, attrs, PoolKind::argmax);
}

Tensor<double> eval_global_pool(const In& in, bool max) {
  const Tensor<double>& x = *in[0];
  Shape shape = {x.shape[0], x.shape[1]};
  shape.resize(x.shape.size(), 1);
  Tensor<double> out(shape, 0.0);
  int64_t size = numel(x.shape) / std::max<int64_t>(numel(shape), 1);
  for (int64_t pl = 0; pl < out.numel(); ++pl) {
    const double* p = x.data.data() + pl * size;
    double acc = max ? -std::numeric_limits<double>::infinity() : 0.0;
    for (int64_t i = 0; i < size; ++i) acc = max ? std::max(acc, p[i]) : acc + p[i];
    out.data[static_cast<size_t>(pl)] = max ? acc : acc / static_cast<double>(size);
  }
  return out;
}
Tensor<double> eval_global_avg_pool(const In& in, const Attrs&) {
  return eval_global_pool(in, false);
}
Tensor<double> eval_global_max_pool(const In& in, const Attrs&) {
  return eval_global_pool(in, true);
}

// ---- LRN

MType infer_lrn(DeduceContext& ctx, const std::vector<MType>& in, const MAttrs& attrs) {
  if (in[0].rank < 2) ctx.fail(fmt::format("lrn needs [N, C, ...], got {}", in[0].str()));
  const_int(ctx, sym_int(attrs, "size"), "size", 1);
  return in[0];
}

// x / (bias + alpha / size * sum of x^2 over the channels c - floor((size-1)/2) ..
// c + ceil((size-1)/2))^beta, as ONNX's LRN.
Tensor<double> eval_lrn(const In& in, const Attrs& attrs) {
  const Tensor<double>& x = *in[0];
  int64_t size = attrs.get_int("size");
  double alpha = attrs.get_rational("alpha").to_double(),
         beta = attrs.get_rational("beta").to_double(),
         bias = attrs.get_rational("bias").to_double();
  int64_t n = x.shape[0], c = x.shape[1], inner = numel(x.shape) / std::max<int64_t>(n * c, 1);
  int64_t before = (size - 1) / 2, after = size - 1 - before;
  Tensor<double> out(x.shape, 0.0);
  std::vector<double> sq(static_cast<size_t>(inner));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch) {
      std::fill(sq.begin(), sq.end(), 0.0);
      for (int64_t k = std::max<int64_t>(0, ch - before); k <= std::min(c - 1, ch + after); ++k) {
        const double* p = x.data.data() + (i * c + k) * inner;
        for (int64_t j = 0; j < inner; ++j) sq[static_cast<size_t>(j)] += p[j] * p[j];
      }
      const double* src = x.data.data() + (i * c + ch) * inner;
      double* dst = out.data.data() + (i * c + ch) * inner;
      for (int64_t j = 0; j < inner; ++j)
        dst[j] =
            src[j] /
            std::pow(bias + alpha / static_cast<double>(size) * sq[static_cast<size_t>(j)], beta);
    }
  return out;
}

// ---- Broadcasting, gathers, strided slices, expand, constants, shapes and casts

// Calls fn(o, idx) for every multi-index of `shape` in row-major order (o: the linear index).
template <class Fn>
void for_each_index(const Shape& shape, Fn&& fn) {
  int64_t total = numel(shape);
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t o = 0; o < total; ++o) {
    fn(o, idx);
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      if (++idx[static_cast<size_t>(d)] < shape[static_cast<size_t>(d)]) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
}

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

MType infer_pow(DeduceContext& ctx, const std::vector<MType>& in, const MAttrs&) {
  const MType &x = in[0], &y = in[1];
  if (x.rank != y.rank)
    ctx.fail(
        fmt::format("pow's operands have ranks {} and {} ({} and {}); they need the same "
                    "rank (use reshape to add size-1 dims)",
                    x.rank, y.rank, x.str(), y.str()));
  if (!x.dims || !y.dims) return MType::tensor_of_rank(x.dtype, x.rank);
  std::vector<SymExpr> out;
  for (size_t i = 0; i < static_cast<size_t>(x.rank); ++i)
    out.push_back(broadcast_dim(ctx, (*x.dims)[i], (*y.dims)[i], i));
  return MType::tensor(x.dtype, out);
}

Tensor<double> eval_pow(const In& in, const Attrs&) {
  const Tensor<double>&x = *in[0], &y = *in[1];
  Shape shape = broadcast_shapes(x.shape, y.shape, "pow");
  auto sx = broadcast_strides(x.shape, shape), sy = broadcast_strides(y.shape, shape);
  Tensor<double> out(shape, 0.0);
  for_each_index(shape, [&](int64_t o, const std::vector<int64_t>& idx) {
    int64_t a = 0, b = 0;
    for (size_t i = 0; i < idx.size(); ++i) {
      a += idx[i] * sx[i];
      b += idx[i] * sy[i];
    }
    out.data[static_cast<size_t>(o)] =
        std::pow(x.data[static_cast<size_t>(a)], y.data[static_cast<size_t>(b)]);
  });
  return out;
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
  for (int64_t i = 0; i < ids.numel(); ++i) {
    double v = ids.data[static_cast<size_t>(i)];
    if (!(v >= static_cast<double>(-extent) && v < static_cast<double>(extent)) ||
        v != std::floor(v))
      throw UserError(
          fmt::format("gather index {} (element {} of the indices) is out of range "
                      "for dim {} of extent {} (valid: {}..{})",
                      v, i, axis, extent, -extent, extent - 1));
    auto row = static_cast<int64_t>(v);
    rows.push_back(row < 0 ? row + extent : row);
  }
  Tensor<double> out(shape, 0.0);
  auto n = static_cast<int64_t>(rows.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < n; ++i)
      std::copy_n(x.data.begin() + (o * extent + rows[static_cast<size_t>(i)]) * inner, inner,
                  out.data.begin() + (o * n + i) * inner);
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
  return MType::tensor(DType::f32,
                       {SymExpr(static_cast<int64_t>(sym_list(attrs, "values").size()))});
}

Tensor<double> eval_dims_tensor(const In&, const Attrs& attrs) {
  const auto& v = attrs.get_list("values");
  return Tensor<double>({static_cast<int64_t>(v.size())}, std::vector<double>(v.begin(), v.end()));
}

constexpr CastTarget kCastTargets[] = {
    {1, "f32", CastTarget::f32, 32},    {2, "u8", CastTarget::uint, 8},
    {3, "i8", CastTarget::sint, 8},     {4, "u16", CastTarget::uint, 16},
    {5, "i16", CastTarget::sint, 16},   {6, "i32", CastTarget::sint, 32},
    {7, "i64", CastTarget::sint, 64},   {9, "bool", CastTarget::boolean, 1},
    {10, "f16", CastTarget::f16, 16},   {11, "f64", CastTarget::f64, 64},
    {12, "u32", CastTarget::uint, 32},  {13, "u64", CastTarget::uint, 64},
    {16, "bf16", CastTarget::bf16, 16},
};

MType infer_cast(DeduceContext& ctx, const std::vector<MType>& in, const MAttrs& attrs) {
  auto code = sym_int(attrs, "to").as_constant();
  const CastTarget* t = code ? cast_target(*code) : nullptr;
  if (!t) {
    std::string known;
    for (const CastTarget& c : kCastTargets) known += fmt::format(" {}={}", c.code, c.name);
    ctx.fail(fmt::format("cast to={} is not a dtype code weft casts to (ONNX's codes:{})",
                         sym_int(attrs, "to").str(), known));
  }
  MType out = in[0];
  out.dtype = t->kind == CastTarget::f16    ? DType::f16
              : t->kind == CastTarget::bf16 ? DType::bf16
                                            : DType::f32;
  return out;
}

double cast_value(double v, const CastTarget& t) {
  switch (t.kind) {
    case CastTarget::f32:
      return static_cast<float>(v);
    case CastTarget::f64:
      return v;
    case CastTarget::f16:
      return round_to_dtype(static_cast<float>(v), DType::f16);
    case CastTarget::bf16:
      return round_to_dtype(static_cast<float>(v), DType::bf16);
    case CastTarget::boolean:
      return v != 0 ? 1.0 : 0.0;
    case CastTarget::sint:
    case CastTarget::uint: {
      // Toward zero, then modulo 2^bits as two's complement (numpy's astype for in-range
      // values); NaN gives 0 and values beyond int64 saturate first.
      if (std::isnan(v)) return 0;
      double tr = std::clamp(std::trunc(v), -9223372036854775808.0, 9223372036854774784.0);
      auto u = static_cast<uint64_t>(static_cast<int64_t>(tr));
      if (t.bits < 64) u &= (uint64_t{1} << t.bits) - 1;
      if (t.kind == CastTarget::uint) return static_cast<double>(u);
      if (t.bits < 64 && (u >> (t.bits - 1)) != 0) u |= ~uint64_t{0} << t.bits;
      return static_cast<double>(static_cast<int64_t>(u));
    }
  }
  return v;
}

Tensor<double> eval_cast(const In& in, const Attrs& attrs) {
  const CastTarget* t = cast_target(attrs.get_int("to"));
  if (!t) throw UserError(fmt::format("cast to={} is not a dtype code", attrs.get_int("to")));
  Tensor<double> out = *in[0];
  for (double& v : out.data) v = cast_value(v, *t);
  return out;
}

// ---- Elementwise operators the importer needs rarely (kept out of ir/ops: see the doc)

MType infer_elementwise(DeduceContext&, const std::vector<MType>& in, const MAttrs&) {
  return in[0];
}

MType infer_clip(DeduceContext& ctx, const std::vector<MType>& in, const MAttrs& attrs) {
  if (std::get<Rational>(attrs.at("max")) < std::get<Rational>(attrs.at("min")))
    ctx.fail("clip's min must be <= its max");
  return in[0];
}

template <class F>
Tensor<double> map_values(const In& in, F&& f) {
  Tensor<double> out = *in[0];
  for (double& v : out.data) v = f(v);
  return out;
}

Tensor<double> eval_clip(const In& in, const Attrs& attrs) {
  double lo = attrs.get_rational("min").to_double(), hi = attrs.get_rational("max").to_double();
  return map_values(in, [&](double v) { return std::isnan(v) ? v : std::clamp(v, lo, hi); });
}
Tensor<double> eval_abs(const In& in, const Attrs&) {
  return map_values(in, [](double v) { return std::abs(v); });
}
Tensor<double> eval_reciprocal(const In& in, const Attrs&) {
  return map_values(in, [](double v) { return 1.0 / v; });
}
Tensor<double> eval_log(const In& in, const Attrs&) {
  return map_values(in, [](double v) { return std::log(v); });
}

// ---- range, tile, pad

MType infer_range(DeduceContext& ctx, const std::vector<MType>&, const MAttrs& attrs) {
  auto delta = sym_int(attrs, "delta").as_constant();
  if (!delta || *delta == 0) ctx.fail("range's delta must be a nonzero integer");
  SymExpr span = sym_int(attrs, "limit") - sym_int(attrs, "start");
  if (*delta < 0) span = -span;
  int64_t step = std::abs(*delta);
  return MType::tensor(DType::f32, {max(SymExpr(0), floordiv(span + (step - 1), SymExpr(step)))});
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

Windows3 concrete_windows(const Shape& x, const std::vector<int64_t>& kernel, const Attrs& attrs,
                          bool ceil_mode, const char* op) {
  Windows3 w;
  int r = static_cast<int>(x.size()) - 2, lead = 3 - r;
  const auto& strides = attrs.get_list("strides");
  const auto& pads = attrs.get_list("pads");
  const std::vector<int64_t> no_dilations;
  const auto& dil = attrs.has("dilations") ? attrs.get_list("dilations") : no_dilations;
  for (int i = 0; i < 3; ++i) {
    int j = i - lead;  // the spatial dim, or < 0 for a padding dim
    auto at = [&](const std::vector<int64_t>& l, int idx, int64_t fallback) {
      return j < 0 || l.empty() ? fallback : l[static_cast<size_t>(idx)];
    };
    w.in[i] = j < 0 ? 1 : x[static_cast<size_t>(j + 2)];
    w.k[i] = j < 0 ? 1 : kernel[static_cast<size_t>(j)];
    w.s[i] = at(strides, j, 1);
    w.d[i] = at(dil, j, 1);
    w.pb[i] = at(pads, j, 0);
    w.pe[i] = at(pads, j + r, 0);
    int64_t span = w.d[i] * (w.k[i] - 1) + 1, padded = w.in[i] + w.pb[i] + w.pe[i];
    if (span > padded)
      throw UserError(
          fmt::format("{}: window of extent {} exceeds the padded dim of {}", op, span, padded));
    if (!ceil_mode) {
      w.out[i] = (padded - span) / w.s[i] + 1;
    } else {
      w.out[i] = (padded - span + w.s[i] - 1) / w.s[i] + 1;
      if ((w.out[i] - 1) * w.s[i] >= w.in[i] + w.pb[i]) --w.out[i];
    }
  }
  return w;
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

const CastTarget* cast_target(int64_t code) {
  for (const CastTarget& t : kCastTargets)
    if (t.code == code) return &t;
  return nullptr;
}

std::vector<std::pair<OpKind, ModelOpImpl>> onnx_model_op_impls() {
  using K = OpKind;
  return {
      {K::conv, {infer_conv, eval_conv}},
      {K::max_pool, {infer_max_pool, eval_max_pool}},
      {K::avg_pool, {infer_avg_pool, eval_avg_pool}},
      {K::max_pool_indices, {infer_max_pool_indices, eval_max_pool_indices}},
      {K::global_avg_pool, {infer_global_pool, eval_global_avg_pool}},
      {K::global_max_pool, {infer_global_pool, eval_global_max_pool}},
      {K::lrn, {infer_lrn, eval_lrn}},
      {K::pow, {infer_pow, eval_pow}},
      {K::gather, {infer_gather, eval_gather}},
      {K::slice_steps, {infer_slice_steps, eval_slice_steps}},
      {K::expand, {infer_expand, eval_expand}},
      {K::fill, {infer_fill, eval_fill}},
      {K::dims_tensor, {infer_dims_tensor, eval_dims_tensor}},
      {K::cast, {infer_cast, eval_cast}},
      {K::clip, {infer_clip, eval_clip}},
      {K::abs, {infer_elementwise, eval_abs}},
      {K::reciprocal, {infer_elementwise, eval_reciprocal}},
      {K::log, {infer_elementwise, eval_log}},
      {K::range, {infer_range, eval_range}},
      {K::tile, {infer_tile, eval_tile}},
      {K::pad, {infer_pad, eval_pad}},
  };
}

}  // namespace weft
