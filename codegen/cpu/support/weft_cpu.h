// The support code of every generated CPU unit (codegen/cpu/emit_cpu.h pastes it, with the files
// it includes, at the top): the headers the loops use, the runtime interface, parallel loops and
// the scalar functions of the operators. Generated code uses only the weft_* names defined here.
#pragma once

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "codegen/cpu/support/weft_rt.h"

// f(i) for every i in [0, n) as tasks of the runtime's parallel_for.
template <class F>
static void weft_pfor(const weft_rt* rt, int64_t n, F f) {
  rt->parallel_for(
      n, [](void* c, int64_t i) { (*static_cast<F*>(c))(i); }, &f);
}

// Coordinates of block `blk` of a gx x gy x gz grid, x fastest (as CUDA numbers them).
static inline void weft_block_coords(int64_t blk, int64_t gx, int64_t gy, int64_t* bx, int64_t* by,
                                     int64_t* bz) {
  *bx = blk % gx;
  *by = (blk / gx) % gy;
  *bz = blk / (gx * gy);
}

// Scalar functions of the operators.
static inline float weft_silu(float x) {
  return x / (1.0f + std::exp(-x));
}
static inline float weft_gelu(float x) {
  return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f));
}
