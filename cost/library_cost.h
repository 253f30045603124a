// Library-quality estimates of pre-defined kernel operators: each is one launch of a
// cuBLAS/cuDNN-class kernel that reads its operands from and writes its results to device memory.
#pragma once

#include "cost/cost_model.h"

namespace weft {

// Fractions of the target's sustained rates a good library kernel reaches (docs/cost-model.md).
inline constexpr double kLibMatmulMemEfficiency = 0.80;      // skinny (memory-bound) GEMM
inline constexpr double kLibMatmulComputeEfficiency = 0.90;  // large GEMM vs measured dense rate
inline constexpr double kLibStreamMemEfficiency = 0.85;      // elementwise / reduction / copy
inline constexpr int64_t kLibMatmulTile = 128;               // output tile (M and N) per CTA
inline constexpr int64_t kLibMatmulMinM = 64;                // smallest warpgroup MMA M

// Cost of the pre-defined operator `op` of kernel graph `g` (not a graph-defined kernel).
KernelCost library_kernel_cost(const Graph& g, const Op& op, const Target& target);

// Sets `c.bound` to the largest of launch, memory and compute time.
void classify_bound(KernelCost& c);

}  // namespace weft
