// The device kernels of the model executor (model/device_vm.h): the operators a compiled model
// runs outside its µGraphs, as grid-stride kernels over raw device pointers in their dtypes
// (0 f32, 1 f16, 2 bf16, as weft_gemm; 3 f64, 4 i64, 5 i32, 6 i16, 7 i8, 8 u8, 9 bool:
// codegen/cuda/model_kernel_families.h's dk_dtype_code), with extern "C" entry points taking one
// argument struct and a stream. Pasted after the prelude; the unit defines weft_dk_scalar (the
// table's scalar forms, codegen/cuda/emit_model_kernels.cpp) after it. One source for the GPU and
// emulation.
#pragma once

#include "codegen/cuda/device/model_kernel_args.cuh"
#include "codegen/cuda/device/prelude.cuh"

#if defined(__CUDACC__) && !defined(WEFT_HOST_EMULATION)
#define WEFT_DK_THREADS 256
#define WEFT_DK_MAX_BLOCKS 1024
#else
// Emulation runs every thread of a block as a std::thread: few threads, one block, same code.
#define WEFT_DK_THREADS 4
#define WEFT_DK_MAX_BLOCKS 1
#endif

// The table's scalar form of operator `op` (an OpKind value) on a, b, c with the constants k, k2;
// weft_dk_scalar_x the same in double, for operators on integer, bool or f64 tensors (exact
// integer arithmetic to 2^53; the transcendental functions still compute in f32).
WEFT_DEV float weft_dk_scalar(int op, float a, float b, float c, float k, float k2);
WEFT_DEV double weft_dk_scalar_x(int op, double a, double b, double c, double k, double k2);

// ONNX Cast's rounding to a target of `kind` (ir/cast.h's CastTarget::Kind: 0-3 a float type,
// whose store rounds; 4 signed, 5 unsigned integers of `bits`; 6 bool): toward zero, then wrapped
// modulo 2^bits; NaN gives 0.
WEFT_DEV double weft_dk_cast(double v, double kind, double bits) {
  if (kind < 4.0) return v;
  if (kind == 6.0) return v != 0.0 ? 1.0 : 0.0;
  if (v != v) return 0.0;
  const double t = fmin(fmax(trunc(v), -9223372036854775808.0), 9223372036854774784.0);
  uint64_t u = static_cast<uint64_t>(static_cast<int64_t>(t));
  const int b = static_cast<int>(bits);
  if (b < 64) u &= (uint64_t{1} << b) - 1;
  if (kind == 5.0) return static_cast<double>(u);
  if (b < 64 && (u >> (b - 1)) != 0) u |= ~uint64_t{0} << b;
  return static_cast<double>(static_cast<int64_t>(u));
}
WEFT_DEV float weft_dk_cast(float v, float kind, float bits) {
  return static_cast<float>(
      weft_dk_cast(static_cast<double>(v), static_cast<double>(kind), static_cast<double>(bits)));
}

// Records an error code in *flag unless one is there (the first writer wins).
WEFT_DEV void weft_dk_flag(int64_t* flag, int64_t code) {
#if defined(__CUDACC__) && !defined(WEFT_HOST_EMULATION)
  atomicCAS(reinterpret_cast<unsigned long long*>(flag), 0ull,
            static_cast<unsigned long long>(code));
#else
  int64_t expected = 0;
  __atomic_compare_exchange_n(flag, &expected, code, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
#endif
}

// An element of any dtype as a double: exact for every dtype (integers to 2^53), so data
// movement and index reads never round an integer through a float.
WEFT_DEV double weft_dk_ldx(const void* p, int dtype, int64_t i) {
  switch (dtype) {
    case 1:
      return weft_ld(static_cast<const weft_f16*>(p) + i);
    case 2:
      return weft_ld(static_cast<const weft_bf16*>(p) + i);
    case 3:
      return static_cast<const double*>(p)[i];
    case 4:
      return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case 5:
      return static_cast<const int32_t*>(p)[i];
    case 6:
      return static_cast<const int16_t*>(p)[i];
    case 7:
      return static_cast<const int8_t*>(p)[i];
    case 8:
    case 9:
      return static_cast<const uint8_t*>(p)[i];
    default:
      return weft_ld(static_cast<const float*>(p) + i);
  }
}
// `v` stored as an element of `dtype` stores it (core/dtype_convert.h's stored_value): floats
// rounded, integers toward zero and wrapped modulo 2^bits (NaN gives 0), bool 1 for nonzero.
WEFT_DEV void weft_dk_stx(void* p, int dtype, int64_t i, double v) {
  if (dtype == 0 || dtype == 1 || dtype == 2) {
    const float f = static_cast<float>(v);
    if (dtype == 1)
      weft_st(static_cast<weft_f16*>(p) + i, f);
    else if (dtype == 2)
      weft_st(static_cast<weft_bf16*>(p) + i, f);
    else
      weft_st(static_cast<float*>(p) + i, f);
    return;
  }
  if (dtype == 3) {
    static_cast<double*>(p)[i] = v;
    return;
  }
  if (dtype == 9) {
    static_cast<uint8_t*>(p)[i] = v != 0.0 ? 1 : 0;
    return;
  }
  const int64_t n = v != v ? 0
                           : static_cast<int64_t>(fmin(fmax(trunc(v), -9223372036854775808.0),
                                                       9223372036854774784.0));
  if (dtype == 4)
    static_cast<int64_t*>(p)[i] = n;
  else if (dtype == 5)
    static_cast<int32_t*>(p)[i] = static_cast<int32_t>(static_cast<uint32_t>(n));
  else if (dtype == 6)
    static_cast<int16_t*>(p)[i] = static_cast<int16_t>(static_cast<uint16_t>(n));
  else if (dtype == 7)
    static_cast<int8_t*>(p)[i] = static_cast<int8_t>(static_cast<uint8_t>(n));
  else
    static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(n);
}
// The compute forms: kernel dtypes load and store as floats directly; the others through the
// exact forms (their arithmetic on the device is f32's: integers exact to 2^24).
WEFT_DEV float weft_dk_ld(const void* p, int dtype, int64_t i) {
  if (dtype == 0) return weft_ld(static_cast<const float*>(p) + i);
  if (dtype == 1) return weft_ld(static_cast<const weft_f16*>(p) + i);
  if (dtype == 2) return weft_ld(static_cast<const weft_bf16*>(p) + i);
  return static_cast<float>(weft_dk_ldx(p, dtype, i));
}
WEFT_DEV void weft_dk_st(void* p, int dtype, int64_t i, float v) {
  if (dtype == 0)
    weft_st(static_cast<float*>(p) + i, v);
  else if (dtype == 1)
    weft_st(static_cast<weft_f16*>(p) + i, v);
  else if (dtype == 2)
    weft_st(static_cast<weft_bf16*>(p) + i, v);
  else
    weft_dk_stx(p, dtype, i, v);
}
// The same by the compute type a kernel instantiates with: float (the kernel dtypes' path) or
// double (integer, bool and f64 tensors: exact to 2^53).
WEFT_DEV void weft_dk_load(const void* p, int dtype, int64_t i, float& v) {
  v = weft_dk_ld(p, dtype, i);
}
WEFT_DEV void weft_dk_load(const void* p, int dtype, int64_t i, double& v) {
  v = weft_dk_ldx(p, dtype, i);
}
WEFT_DEV void weft_dk_store(void* p, int dtype, int64_t i, float v) {
  weft_dk_st(p, dtype, i, v);
}
WEFT_DEV void weft_dk_store(void* p, int dtype, int64_t i, double v) {
  weft_dk_stx(p, dtype, i, v);
}
WEFT_DEV float weft_dk_max(float a, float b) {
  return fmaxf(a, b);
}
WEFT_DEV double weft_dk_max(double a, double b) {
  return fmax(a, b);
}
// Whether a kernel over these dtype codes takes the exact (double) path.
WEFT_DEV bool weft_dk_exact(int a, int b, int c) {
  return a >= 3 || b >= 3 || c >= 3;
}

// Index mapping (every data-movement operator): output element o of `rank` dims `dims` at
// coordinates c_d; per dim the source coordinate s = (c_d / div_d) * step_d + start_d, outside
// [0, bound_d) the element is `fill` (pad), else s % mod_d (tile, repeat) times in_stride_d
// (0: broadcast) added to in_offset. The output is written at out_offset + sum c_d out_stride_d
// (a region of a larger tensor: concat).
WEFT_DEV void weft_dk_map_body(const weft_dk_map_args& a, const int64_t w_first,
                               const int64_t w_step) {
  for (int64_t o = w_first; o < a.numel; o += w_step) {
    int64_t rest = o, src = a.in_offset, dst = a.out_offset;
    bool inside = true;
    for (int d = a.rank - 1; d >= 0; --d) {
      const int64_t c = rest % a.dims[d];
      rest /= a.dims[d];
      dst += c * a.out_stride[d];
      int64_t s = (c / a.div[d]) * a.step[d] + a.start[d];
      if (s < 0 || s >= a.bound[d]) inside = false;
      src += (s % a.mod[d]) * a.in_stride[d];
    }
    weft_dk_stx(a.out, a.out_dtype, dst, inside ? weft_dk_ldx(a.in, a.in_dtype, src) : a.fill);
  }
}

// Elementwise with broadcasting: out[o] = weft_dk_scalar(op, x0, x1, x2, k), operand j read at
// sum c_d stride[j][d] (0 on broadcast dims).
WEFT_DEV void weft_dk_elementwise_body(const weft_dk_elementwise_args& a, const int64_t w_first,
                                       const int64_t w_step) {
  // Integer, bool and f64 tensors (codes >= 3) compute in double: exact integers to 2^53.
  bool exact = a.out_dtype >= 3;
  for (int j = 0; j < a.operands; ++j) exact = exact || a.in_dtype[j] >= 3;
  for (int64_t o = w_first; o < a.numel; o += w_step) {
    double x[WEFT_DK_MAX_OPERANDS] = {0.0, 0.0, 0.0};
    for (int j = 0; j < a.operands; ++j) {
      int64_t rest = o, at = 0;
      for (int d = a.rank - 1; d >= 0; --d) {
        at += (rest % a.dims[d]) * a.stride[j][d];
        rest /= a.dims[d];
      }
      x[j] =
          exact ? weft_dk_ldx(a.in[j], a.in_dtype[j], at) : weft_dk_ld(a.in[j], a.in_dtype[j], at);
    }
    if (exact)
      weft_dk_stx(a.out, a.out_dtype, o, weft_dk_scalar_x(a.op, x[0], x[1], x[2], a.k, a.k2));
    else
      weft_dk_st(a.out, a.out_dtype, o,
                 weft_dk_scalar(a.op, static_cast<float>(x[0]), static_cast<float>(x[1]),
                                static_cast<float>(x[2]), static_cast<float>(a.k),
                                static_cast<float>(a.k2)));
  }
}

// Kinds 0-2 of the row kernel (sum, mean, max of the elements g, g + to, ... of a row) in T.
template <typename T>
WEFT_DEV void weft_dk_reduce_row(const weft_dk_rows_args& a, int64_t base, int64_t g, int64_t at) {
  T acc = a.kind == 2 ? static_cast<T>(-INFINITY) : static_cast<T>(0);
  int64_t count = 0;
  for (int64_t j = g; j < a.n; j += a.to, ++count) {
    T v;
    weft_dk_load(a.in, a.in_dtype, base + j * a.inner, v);
    acc = a.kind == 2 ? weft_dk_max(acc, v) : acc + v;
  }
  if (a.kind == 1) acc /= static_cast<T>(count);
  weft_dk_store(a.out, a.out_dtype, at, acc);
}

// Row kernels over [outer, n, inner] views (one thread per (outer, inner) pair, f32 partials):
// kind 0 sum, 1 mean, 2 max over n to size `to` (element g combines g, g + to, ...); 3 softmax
// over n (max subtracted); 4 layer norm over n (inner = 1; eps in k); 5 rms norm over n (eps in k).
WEFT_DEV void weft_dk_rows_body(const weft_dk_rows_args& a, const int64_t w_first,
                                const int64_t w_step) {
  const int64_t groups = a.kind <= 2 ? a.to : 1;
  for (int64_t t = w_first; t < a.outer * a.inner * groups; t += w_step) {
    const int64_t g = t % groups, q = t / groups, i = q % a.inner, o = q / a.inner;
    const int64_t base = o * a.n * a.inner + i;
    if (a.kind <= 2) {
      const int64_t at = (o * a.to + g) * a.inner + i;
      if (weft_dk_exact(a.in_dtype, a.out_dtype, 0))
        weft_dk_reduce_row<double>(a, base, g, at);
      else
        weft_dk_reduce_row<float>(a, base, g, at);
    } else if (a.kind == 3) {
      float m = -INFINITY, sum = 0.0f;
      for (int64_t j = 0; j < a.n; ++j)
        m = fmaxf(m, weft_dk_ld(a.in, a.in_dtype, base + j * a.inner));
      for (int64_t j = 0; j < a.n; ++j)
        sum += expf(weft_dk_ld(a.in, a.in_dtype, base + j * a.inner) - m);
      for (int64_t j = 0; j < a.n; ++j)
        weft_dk_st(a.out, a.out_dtype, base + j * a.inner,
                   expf(weft_dk_ld(a.in, a.in_dtype, base + j * a.inner) - m) / sum);
    } else if (a.kind == 5) {
      float squares = 0.0f;
      for (int64_t j = 0; j < a.n; ++j) {
        const float v = weft_dk_ld(a.in, a.in_dtype, base + j * a.inner);
        squares += v * v;
      }
      const float inv = 1.0f / sqrtf(squares / static_cast<float>(a.n) + a.k);
      for (int64_t j = 0; j < a.n; ++j)
        weft_dk_st(a.out, a.out_dtype, base + j * a.inner,
                   weft_dk_ld(a.in, a.in_dtype, base + j * a.inner) * inv);
    } else {
      float mean = 0.0f, var = 0.0f;
      for (int64_t j = 0; j < a.n; ++j) mean += weft_dk_ld(a.in, a.in_dtype, base + j * a.inner);
      mean /= static_cast<float>(a.n);
      for (int64_t j = 0; j < a.n; ++j) {
        const float d = weft_dk_ld(a.in, a.in_dtype, base + j * a.inner) - mean;
        var += d * d;
      }
      const float inv = 1.0f / sqrtf(var / static_cast<float>(a.n) + a.k);
      for (int64_t j = 0; j < a.n; ++j)
        weft_dk_st(a.out, a.out_dtype, base + j * a.inner,
                   (weft_dk_ld(a.in, a.in_dtype, base + j * a.inner) - mean) * inv);
    }
  }
}

// Gather along an axis: x viewed as [outer, extent, inner], out as [outer, ids, inner]; an index
// that is not an integer in [lowest, extent) gives NaN and sets the error flag (a kernel cannot
// throw: the executor reads the flag back after the run and names the operator).
WEFT_DEV void weft_dk_gather_body(const weft_dk_gather_args& a, const int64_t w_first,
                                  const int64_t w_step) {
  for (int64_t t = w_first; t < a.outer * a.count * a.inner; t += w_step) {
    const int64_t i = t % a.inner, r = (t / a.inner) % a.count, o = t / (a.inner * a.count);
    const double v = weft_dk_ldx(a.ids, a.ids_dtype, r);
    double value = NAN;
    if (v >= static_cast<double>(a.lowest) && v < static_cast<double>(a.extent) && v == floor(v)) {
      int64_t row = static_cast<int64_t>(v);
      if (row < 0) row += a.extent;
      value = weft_dk_ldx(a.x, a.x_dtype, (o * a.extent + row) * a.inner + i);
    } else {
      weft_dk_flag(a.error, (a.site << 40) | r);
    }
    weft_dk_stx(a.out, a.out_dtype, t, value);
  }
}

// An index of x's dim of `extent`: negative ones count from the end; one out of range, or not an
// integer, flags the element and gives -1.
WEFT_DEV int64_t weft_dk_checked_index(double v, int64_t extent, int64_t* error, int64_t site,
                                       int64_t element) {
  if (v >= static_cast<double>(-extent) && v < static_cast<double>(extent) && v == floor(v)) {
    int64_t i = static_cast<int64_t>(v);
    return i < 0 ? i + extent : i;
  }
  weft_dk_flag(error, (site << 40) | element);
  return -1;
}

// gather_elements and gather_nd, one thread per output element.
WEFT_DEV void weft_dk_index_body(const weft_dk_index_args& a, const int64_t w_first,
                                 const int64_t w_step) {
  for (int64_t t = w_first; t < a.numel; t += w_step) {
    int64_t src = 0;
    bool ok = true;
    if (a.kind == 0) {
      int64_t rest = t, stride = 1;
      for (int d = a.rank - 1; d >= 0; --d) {
        int64_t c = rest % a.dims[d];
        rest /= a.dims[d];
        if (d == a.axis) {
          c = weft_dk_checked_index(weft_dk_ldx(a.ids, a.ids_dtype, t), a.x_dims[d], a.error,
                                    a.site, t);
          ok = ok && c >= 0;
        }
        src += c * stride;
        stride *= a.x_dims[d];
      }
    } else {
      const int64_t slice = t % a.inner, tuple = t / a.inner;
      for (int64_t j = 0; j < a.m; ++j) {
        const int64_t extent = a.x_dims[a.batch_dims + j];
        const int64_t c = weft_dk_checked_index(weft_dk_ldx(a.ids, a.ids_dtype, tuple * a.m + j),
                                                extent, a.error, a.site, tuple * a.m + j);
        ok = ok && c >= 0;
        src = src * extent + (c < 0 ? 0 : c);
      }
      src = (tuple / a.tuples) * a.per_batch + src * a.inner + slice;
    }
    weft_dk_stx(a.out, a.out_dtype, t, ok ? weft_dk_ldx(a.x, a.x_dtype, src) : NAN);
  }
}

// Output element t of the matmul: row `ra` of a times column `cb` of b, accumulated in T in k
// order.
template <typename T>
WEFT_DEV void weft_dk_dot(const weft_dk_matmul_args& a, int64_t ra, int64_t cb, int64_t t) {
  T acc = 0;
  for (int64_t q = 0; q < a.k; ++q) {
    T x, y;
    weft_dk_load(a.a, a.a_dtype, ra + q, x);
    weft_dk_load(a.b, a.b_dtype, cb + q * a.n, y);
    acc += x * y;
  }
  weft_dk_store(a.out, a.out_dtype, t, acc);
}

// Batched matmul [.., m, k] x [.., k, n] with broadcast batch dims, one thread per output
// element, f32 accumulation in k order (the simple, correct path; µGraph matmuls use cuBLAS).
WEFT_DEV void weft_dk_matmul_body(const weft_dk_matmul_args& a, const int64_t w_first,
                                  const int64_t w_step) {
  for (int64_t t = w_first; t < a.batch * a.m * a.n; t += w_step) {
    const int64_t j = t % a.n, i = (t / a.n) % a.m, p = t / (a.n * a.m);
    int64_t oa = 0, ob = 0, rest = p;
    for (int d = a.batch_rank - 1; d >= 0; --d) {
      oa += (rest % a.batch_dims[d]) * a.a_stride[d];
      ob += (rest % a.batch_dims[d]) * a.b_stride[d];
      rest /= a.batch_dims[d];
    }
    if (weft_dk_exact(a.a_dtype, a.b_dtype, a.out_dtype))
      weft_dk_dot<double>(a, oa + i * a.k, ob + j, t);
    else
      weft_dk_dot<float>(a, oa + i * a.k, ob + j, t);
  }
}

// rope: thread per rotated pair (j, j + cols/2) of a row, angle pos * theta^(-2j/cols) in
// double (positions reach thousands); causal_mask: thread per element, -inf where
// col > row + offset.
WEFT_DEV void weft_dk_position_body(const weft_dk_position_args& a, const int64_t w_first,
                                    const int64_t w_step) {
  const int64_t half = a.cols / 2, work = a.kind == 0 ? a.numel / 2 : a.numel;
  for (int64_t t = w_first; t < work; t += w_step) {
    if (a.kind == 0) {
      const int64_t j = t % half, r = t / half, at = r * a.cols + j;
      const double pos = static_cast<double>(a.offset + r % a.rows);
      const double angle = pos * pow(static_cast<double>(a.theta),
                                     -2.0 * static_cast<double>(j) / static_cast<double>(a.cols));
      const float c = static_cast<float>(cos(angle)), s = static_cast<float>(sin(angle));
      const float x0 = weft_dk_ld(a.in, a.in_dtype, at),
                  x1 = weft_dk_ld(a.in, a.in_dtype, at + half);
      weft_dk_st(a.out, a.out_dtype, at, x0 * c - x1 * s);
      weft_dk_st(a.out, a.out_dtype, at + half, x1 * c + x0 * s);
    } else {
      const int64_t j = t % a.cols, r = (t / a.cols) % a.rows;
      weft_dk_st(a.out, a.out_dtype, t,
                 j > r + a.offset ? -INFINITY : weft_dk_ld(a.in, a.in_dtype, t));
    }
  }
}

WEFT_DEV void weft_dk_generate_body(const weft_dk_generate_args& a, const int64_t w_first,
                                    const int64_t w_step) {
  for (int64_t t = w_first; t < a.numel; t += w_step) {
    // Integers (range, dims_tensor) exact: through a double, stored in the output's dtype.
    const double v = a.kind == 0   ? static_cast<double>(a.value)
                     : a.kind == 1 ? static_cast<double>(a.start + t * a.delta)
                                   : static_cast<double>(a.values[t]);
    weft_dk_stx(a.out, a.out_dtype, t, v);
  }
}

// One thread per output element: conv sums its group's channels over the window's taps inside
// the input; the pools take max / mean / argmax of those taps (padding never wins); LRN divides
// by (bias + alpha / size * the sum of squares over the neighbouring channels)^beta.
WEFT_DEV void weft_dk_window_body(const weft_dk_window_args& a, const int64_t w_first,
                                  const int64_t w_step) {
  const int64_t channels = a.kind == 0 ? a.m : a.c;
  const int64_t plane_in = a.in[0] * a.in[1] * a.in[2];
  const int64_t plane_out = a.out_dims[0] * a.out_dims[1] * a.out_dims[2];
  const int64_t total = a.n * channels * (a.kind == 4 ? plane_in : plane_out);
  for (int64_t t = w_first; t < total; t += w_step) {
    if (a.kind == 4) {
      const int64_t p = t % plane_in, ch = (t / plane_in) % a.c, i = t / (plane_in * a.c);
      const int64_t before = (a.size - 1) / 2, after = a.size - 1 - before;
      float sq = 0.0f;
      for (int64_t k = ch - before < 0 ? 0 : ch - before; k <= ch + after && k < a.c; ++k) {
        const float v = weft_dk_ld(a.x, a.x_dtype, (i * a.c + k) * plane_in + p);
        sq += v * v;
      }
      weft_dk_st(a.out, a.out_dtype, t,
                 weft_dk_ld(a.x, a.x_dtype, t) /
                     powf(a.bias + a.alpha / static_cast<float>(a.size) * sq, a.beta));
      continue;
    }
    const int64_t p = t % plane_out, q = t / plane_out, ch = q % channels, i = q / channels;
    const int64_t o[3] = {p / (a.out_dims[2] * a.out_dims[1]), (p / a.out_dims[2]) % a.out_dims[1],
                          p % a.out_dims[2]};
    int64_t first[3], padded = 1;
    for (int e = 0; e < 3; ++e) {
      first[e] = o[e] * a.s[e] - a.pb[e];
      int64_t in_pad = 0;
      for (int64_t k = 0; k < a.k[e]; ++k) {
        const int64_t pos = first[e] + k * a.d[e];
        if (pos >= -a.pb[e] && pos < a.in[e] + a.pe[e]) ++in_pad;
      }
      padded *= in_pad;
    }
    const int64_t cg = a.c / a.group, group = a.kind == 0 ? ch / (a.m / a.group) : 0;
    float acc = a.kind == 1 || a.kind == 3 ? -INFINITY : 0.0f;
    int64_t count = 0, best = -1;
    for (int64_t cc = 0; cc < (a.kind == 0 ? cg : 1); ++cc) {
      const int64_t plane = a.kind == 0 ? (i * a.c + group * cg + cc) * plane_in : q * plane_in;
      for (int64_t kd = 0; kd < a.k[0]; ++kd) {
        const int64_t id = first[0] + kd * a.d[0];
        if (id < 0 || id >= a.in[0]) continue;
        for (int64_t kh = 0; kh < a.k[1]; ++kh) {
          const int64_t ih = first[1] + kh * a.d[1];
          if (ih < 0 || ih >= a.in[1]) continue;
          for (int64_t kw = 0; kw < a.k[2]; ++kw) {
            const int64_t iw = first[2] + kw * a.d[2];
            if (iw < 0 || iw >= a.in[2]) continue;
            const int64_t at = (id * a.in[1] + ih) * a.in[2] + iw;
            const float v = weft_dk_ld(a.x, a.x_dtype, plane + at);
            ++count;
            if (a.kind == 0) {
              const int64_t wat = (((ch * cg + cc) * a.k[0] + kd) * a.k[1] + kh) * a.k[2] + kw;
              acc += v * weft_dk_ld(a.w, a.w_dtype, wat);
            } else if (a.kind == 2) {
              acc += v;
            } else if (best < 0 || v > acc) {
              acc = v;
              best = at;
            }
          }
        }
      }
    }
    if (a.kind == 2) acc /= static_cast<float>(a.include_pad ? padded : count);
    if (a.kind == 3) acc = static_cast<float>(best < 0 ? -1 : q * plane_in + best);
    weft_dk_st(a.out, a.out_dtype, t, acc);
  }
}

// Each family's kernel runs its body over the grid's threads. A unit that runs the bodies itself
// (a persistent kernel's task bodies, mpk/) defines WEFT_DK_BODIES_ONLY and gets no kernels.
#ifndef WEFT_DK_BODIES_ONLY
#define WEFT_DK_ENTRY(name)                                                               \
  WEFT_KERNEL(WEFT_DK_THREADS) name(name##_args a) {                                      \
    name##_body(a, weft_gtid(), weft_gthreads());                                         \
  }                                                                                       \
  extern "C" int name##_launch(const name##_args* args, void* stream) {                   \
    int64_t blocks = (name##_work(*args) + WEFT_DK_THREADS - 1) / WEFT_DK_THREADS;        \
    if (blocks < 1) blocks = 1;                                                           \
    if (blocks > WEFT_DK_MAX_BLOCKS) blocks = WEFT_DK_MAX_BLOCKS;                         \
    (void)stream;                                                                         \
    WEFT_LAUNCH(name, static_cast<int>(blocks), 1, 1, WEFT_DK_THREADS, 0, stream, *args); \
    return 0;                                                                             \
  }
WEFT_DK_ENTRY(weft_dk_map)
WEFT_DK_ENTRY(weft_dk_elementwise)
WEFT_DK_ENTRY(weft_dk_rows)
WEFT_DK_ENTRY(weft_dk_gather)
WEFT_DK_ENTRY(weft_dk_index)
WEFT_DK_ENTRY(weft_dk_matmul)
WEFT_DK_ENTRY(weft_dk_position)
WEFT_DK_ENTRY(weft_dk_generate)
WEFT_DK_ENTRY(weft_dk_window)
#endif  // WEFT_DK_BODIES_ONLY
