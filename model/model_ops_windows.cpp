// The implementations of the model-only operators over sliding windows (issue 15): convolution,
// pooling, global pooling and LRN, over [N, C, *spatial] with 1 to 3 spatial dims. Their rows are
// in ir/ops_model.cpp; model_impl() (model_ops.h) attaches these.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "model/model_ops.h"

namespace weft {
namespace {

using In = std::vector<const Tensor<double>*>;

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
  MType t = infer_pool(ctx, in, attrs, "max_pool_indices", true);
  t.dtype = DType::i64;
  return t;
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

// conv(x, w) + bias (+ residual), clipped, then SiLU where asked: the bias [1, M, 1, ...] of the
// result's rank, the residual of the result's type.
MType infer_fused_conv(DeduceContext& ctx, const std::vector<MType>& in, const MAttrs& attrs) {
  MType out = infer_conv(ctx, {in[0], in[1]}, attrs);
  for (size_t i = 2; i < in.size(); ++i)
    if (in[i].dtype != out.dtype || in[i].rank != out.rank)
      ctx.fail(fmt::format("fused_conv's {} is {}; it must be a {} tensor of rank {}",
                           i == 2 ? "bias" : "residual", in[i].str(), dtype_name(out.dtype),
                           out.rank));
  if (!out.dims || !in[2].dims || (in.size() > 3 && !in[3].dims)) return out;
  for (size_t d = 0; d < out.dims->size(); ++d) {
    ctx.require_eq((*in[2].dims)[d], d == 1 ? (*out.dims)[1] : SymExpr(1),
                   fmt::format("fused_conv's bias dim {}", d));
    if (in.size() > 3)
      ctx.require_eq((*in[3].dims)[d], (*out.dims)[d],
                     fmt::format("fused_conv's residual dim {} (the result's)", d));
  }
  return out;
}

Tensor<double> eval_fused_conv(const In& in, const Attrs& attrs) {
  Tensor<double> out = eval_conv({in[0], in[1]}, attrs);
  const Tensor<double>& bias = *in[2];
  const int64_t m = out.shape[1], plane = numel(out.shape) / (out.shape[0] * m);
  if (numel(bias.shape) != m || (in.size() > 3 && in[3]->shape != out.shape))
    throw UserError(fmt::format("fused_conv: bias {} or residual do not fit the result {}",
                                shape_str(bias.shape), shape_str(out.shape)));
  const double lo = attrs.get_rational("min").to_double(),
               hi = attrs.get_rational("max").to_double();
  const bool silu = attrs.get_int("silu") == 1;
  for (int64_t e = 0; e < numel(out.shape); ++e) {
    double v = out.data[e] + bias.data[(e / plane) % m];
    if (in.size() > 3) v += in[3]->data[e];
    v = std::isnan(v) ? v : std::clamp(v, lo, hi);  // NaN stays, as clip keeps it
    out.data[e] = silu ? v / (1 + std::exp(-v)) : v;
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

}  // namespace

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

std::vector<std::pair<OpKind, ModelOpImpl>> window_model_op_impls() {
  using K = OpKind;
  return {
      {K::conv, {infer_conv, eval_conv}},
      {K::fused_conv, {infer_fused_conv, eval_fused_conv}},
      {K::max_pool, {infer_max_pool, eval_max_pool}},
      {K::avg_pool, {infer_avg_pool, eval_avg_pool}},
      {K::max_pool_indices, {infer_max_pool_indices, eval_max_pool_indices}},
      {K::global_avg_pool, {infer_global_pool, eval_global_avg_pool}},
      {K::global_max_pool, {infer_global_pool, eval_global_max_pool}},
      {K::lrn, {infer_lrn, eval_lrn}},
  };
}

}  // namespace weft
