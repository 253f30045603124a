// The prelude of every generated CUDA unit (codegen/cuda/prelude.h pastes it, with the files it
// includes, at the top): generated code uses only the weft_* names defined here, so the same unit
// compiles with nvcc for a GPU and, as C++20 with -DWEFT_HOST_EMULATION, on the host.
#pragma once

#include <math.h>
#include <stdint.h>
#include <string.h>

#if !defined(__CUDACC__) && !defined(WEFT_HOST_EMULATION)
#error "compile with nvcc, or as C++20 with -DWEFT_HOST_EMULATION"
#endif

#if defined(__CUDACC__) && !defined(WEFT_HOST_EMULATION)
#include "codegen/cuda/device/cuda.cuh"
#else
#include "codegen/cuda/device/emulation.cuh"
#endif

// Raises a kernel's dynamic shared-memory limit (above 48 KB) once per call site and process, not
// at every launch: the attribute stays set, and the call is host work that a launch timed between
// CUDA events would include. A static's initializer runs once, thread-safely; a failure is kept
// and returned by every later call.
#define WEFT_SET_SMEM(kernel, bytes)                                            \
  do {                                                                          \
    static const int weft_smem_limit_ = weft_raise_smem_limit(kernel, (bytes)); \
    if (weft_smem_limit_ != 0) return weft_smem_limit_;                         \
  } while (0)

// Scalar functions of the operators and the swizzle, on the device and in emulation alike.
WEFT_DEV float weft_silu(float x) {
  return x / (1.0f + expf(-x));
}
WEFT_DEV float weft_gelu(float x) {
  return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}
// Byte-level XOR swizzle of a shared buffer with rows (its contiguous dim) of ROW_BYTES (plan.h):
// the element at byte b is stored with the 16-byte chunk index within its 128-byte segment XORed
// with a key, the row index modulo 8 for rows of a multiple of 128 bytes, else the segment index
// (8 rows of 16, 32 or 64 bytes share 1, 2 or 4 segments). The same 16 bytes of 8 consecutive
// rows (an ldmatrix phase; for narrower rows, 8 rows from a multiple of 8) then fall in 8
// different groups of 4 banks. The key is constant within a segment and only bits 4-6 change: a
// bijection on every segment (its own inverse). `i` is an element index, E the element size.
template <int E, int ROW_BYTES>
WEFT_DEV int weft_swz(int i) {
  constexpr int kSegmentsPerRow = ROW_BYTES % 128 == 0 ? ROW_BYTES / 128 : 1;
  const int b = i * E;
  return (b ^ ((((b >> 7) / kSegmentsPerRow) & 7) << 4)) / E;
}

// C = A B for row-major A (m x k), B (k x n), C (m x n), f32 accumulation in k order, computed by
// threads [0, THREADS) of the CTA (the others must not call it): BM x BN output tiles, each thread
// owning outputs tid, tid + THREADS, ...; BK-deep slices of A and B staged as f32 in shared memory
// (`as`: BM x (BK + 1), padded against bank conflicts; `bs`: BK x BN), the threads meeting at named
// barrier 1. The library matmul of a persistent kernel's task body, which cannot call cuBLAS: the
// simple, correct path (no tensor cores, no pipelining).
template <int BM, int BN, int BK, int THREADS, class TA, class TB, class TC>
WEFT_DEV void weft_cta_gemm(int64_t m, int64_t n, int64_t k, const TA* a, const TB* b, TC* c,
                            float* as, float* bs) {
  constexpr int kPer = (BM * BN + THREADS - 1) / THREADS;
  const int tid = weft_tid();
  for (int64_t i0 = 0; i0 < m; i0 += BM)
    for (int64_t j0 = 0; j0 < n; j0 += BN) {
      float acc[kPer];
      for (int p = 0; p < kPer; ++p) acc[p] = 0.0f;
      for (int64_t q0 = 0; q0 < k; q0 += BK) {
        for (int e = tid; e < BM * BK; e += THREADS) {
          const int64_t i = i0 + e / BK, q = q0 + e % BK;
          as[(e / BK) * (BK + 1) + e % BK] = i < m && q < k ? weft_ld(&a[i * k + q]) : 0.0f;
        }
        for (int e = tid; e < BK * BN; e += THREADS) {
          const int64_t q = q0 + e / BN, j = j0 + e % BN;
          bs[e] = q < k && j < n ? weft_ld(&b[q * n + j]) : 0.0f;
        }
        weft_bar_sync(1, THREADS);
        for (int p = 0; p < kPer; ++p) {
          const int e = tid + p * THREADS;
          if (e >= BM * BN) break;
          const float* ar = &as[(e / BN) * (BK + 1)];
          const float* bc = &bs[e % BN];
          float s = acc[p];
          for (int q = 0; q < BK; ++q) s += ar[q] * bc[q * BN];
          acc[p] = s;
        }
        weft_bar_sync(1, THREADS);
      }
      for (int p = 0; p < kPer; ++p) {
        const int e = tid + p * THREADS;
        const int64_t i = i0 + e / BN, j = j0 + e % BN;
        if (e < BM * BN && i < m && j < n) weft_st(&c[i * n + j], acc[p]);
      }
    }
}
