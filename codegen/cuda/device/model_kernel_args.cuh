// The argument structs of the model executor's device kernels (model_kernels.cuh), shared by the
// kernels and the host code that fills them (runtime/device_kernels.cpp): plain C++, no device
// code, so the host includes it as it is. Pointers are device pointers; dtypes 0 f32, 1 f16, 2
// bf16.
#pragma once

#include <stdint.h>

#define WEFT_DK_MAX_RANK 8
#define WEFT_DK_MAX_OPERANDS 3

struct weft_dk_map_args {
  const void* in;
  void* out;
  int in_dtype, out_dtype, rank;
  int64_t numel, in_offset, out_offset;
  float fill;
  int64_t dims[WEFT_DK_MAX_RANK], out_stride[WEFT_DK_MAX_RANK], div[WEFT_DK_MAX_RANK],
      step[WEFT_DK_MAX_RANK], start[WEFT_DK_MAX_RANK], bound[WEFT_DK_MAX_RANK],
      mod[WEFT_DK_MAX_RANK], in_stride[WEFT_DK_MAX_RANK];
};

struct weft_dk_elementwise_args {
  const void* in[WEFT_DK_MAX_OPERANDS];
  void* out;
  int in_dtype[WEFT_DK_MAX_OPERANDS], out_dtype, operands, rank, op;
  // The operator's constants (clip: min, max; cast: target kind, bits), in double: an integer
  // operator's offset or factor is exact.
  double k, k2;
  int64_t numel;
  int64_t dims[WEFT_DK_MAX_RANK], stride[WEFT_DK_MAX_OPERANDS][WEFT_DK_MAX_RANK];
};

struct weft_dk_rows_args {
  const void* in;
  void* out;
  int in_dtype, out_dtype, kind;
  int64_t outer, n, inner, to;
  float k;
};

struct weft_dk_gather_args {
  const void* x;
  const void* ids;
  void* out;
  int x_dtype, ids_dtype, out_dtype;
  int64_t outer, extent, inner, count;
  int64_t lowest;  // the smallest valid index: -extent (gather), 0 (embedding)
  // An index out of range sets *error (once, first writer wins) to site << 40 | element.
  int64_t* error;
  int64_t site;
};

// Element-wise index gathers (ONNX's). kind 0, gather_elements: `out` has the indices' shape
// (dims[0..rank)); element t reads x at t's coordinates with dim `axis` replaced by ids[t]. kind
// 1, gather_nd: each tuple of m indices (dims x_dims[batch_dims..batch_dims + m)) picks a slice of
// `inner` elements of x within its batch (`per_batch` elements; `tuples` tuples per batch).
struct weft_dk_index_args {
  const void* x;
  const void* ids;
  void* out;
  int x_dtype, ids_dtype, out_dtype, kind, rank, axis, batch_dims;
  int64_t numel, m, inner, tuples, per_batch;
  int64_t dims[WEFT_DK_MAX_RANK], x_dims[WEFT_DK_MAX_RANK];
  int64_t* error;  // as weft_dk_gather_args: site << 40 | the index element
  int64_t site;
};

// rope (kind 0) or causal_mask (kind 1) over x viewed as [..., rows, cols].
struct weft_dk_position_args {
  const void* in;
  void* out;
  int in_dtype, out_dtype, kind;
  int64_t numel, rows, cols, offset;
  float theta;
};

// Tensors made from nothing: kind 0 every element `value`, 1 start + i * delta, 2 values[i].
struct weft_dk_generate_args {
  void* out;
  int out_dtype, kind;
  int64_t numel, start, delta;
  float value;
  int64_t values[WEFT_DK_MAX_RANK];
};

// Sliding windows over x = [N, C, d, h, w] (fewer spatial dims padded with extent 1): kind 0 conv
// with w = [M, C / group, kd, kh, kw], 1 max pool, 2 average pool (include_pad: divide by the taps
// inside the padded extent), 3 max pool's flattened argmax, 4 LRN over `size` channels.
struct weft_dk_window_args {
  const void* x;
  const void* w;
  void* out;
  int x_dtype, w_dtype, out_dtype, kind, include_pad;
  int64_t n, c, m, group, size;
  int64_t in[3], k[3], s[3], d[3], pb[3], pe[3], out_dims[3];
  float alpha, beta, bias;
};

struct weft_dk_matmul_args {
  const void* a;
  const void* b;
  void* out;
  int a_dtype, b_dtype, out_dtype, batch_rank;
  int64_t batch, m, n, k;
  // The result's batch dims and each operand's element stride per batch dim (0: broadcast).
  int64_t batch_dims[WEFT_DK_MAX_RANK], a_stride[WEFT_DK_MAX_RANK], b_stride[WEFT_DK_MAX_RANK];
};

// The elements (or rows, or output positions) each family's body strides over: its launch's
// threads, and the work a persistent kernel's task of it divides.
inline int64_t weft_dk_map_work(const weft_dk_map_args& a) {
  return a.numel;
}
inline int64_t weft_dk_elementwise_work(const weft_dk_elementwise_args& a) {
  return a.numel;
}
inline int64_t weft_dk_rows_work(const weft_dk_rows_args& a) {
  return a.outer * a.inner * (a.kind <= 2 ? a.to : 1);
}
inline int64_t weft_dk_gather_work(const weft_dk_gather_args& a) {
  return a.outer * a.count * a.inner;
}
inline int64_t weft_dk_index_work(const weft_dk_index_args& a) {
  return a.numel;
}
inline int64_t weft_dk_matmul_work(const weft_dk_matmul_args& a) {
  return a.batch * a.m * a.n;
}
inline int64_t weft_dk_position_work(const weft_dk_position_args& a) {
  return a.numel;
}
inline int64_t weft_dk_generate_work(const weft_dk_generate_args& a) {
  return a.numel;
}
inline int64_t weft_dk_window_work(const weft_dk_window_args& a) {
  return a.n * (a.kind == 0 ? a.m : a.c) *
         (a.kind == 4 ? a.in[0] * a.in[1] * a.in[2]
                      : a.out_dims[0] * a.out_dims[1] * a.out_dims[2]);
}
