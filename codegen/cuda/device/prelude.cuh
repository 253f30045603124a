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

// Scalar functions of the operators and the swizzle, on the device and in emulation alike.
WEFT_DEV float weft_silu(float x) { return x / (1.0f + expf(-x)); }
WEFT_DEV float weft_gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }
// Byte-level XOR swizzle (plan.h): the 16-byte chunk index within each 128-byte row is XORed
// with the row index modulo 8; `i` is an element index, E the element size.
template <int E>
WEFT_DEV int weft_swz(int i) {
  int b = i * E;
  return (b ^ (((b >> 7) & 7) << 4)) / E;
}
