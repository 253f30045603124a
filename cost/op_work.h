// Work of one operator application, independent of where it runs: matmul dimensions and the
// CUDA-core instruction slots of elementwise, reduction and composite operators.
#pragma once

#include <cstdint>

#include "core/target.h"
#include "ir/graph.h"

namespace weft {

struct MatmulDims {
  int64_t batch = 1;  // product of the result's leading (batch) dims
  int64_t m = 0, n = 0, k = 0;
  double flops() const { return 2.0 * batch * m * n * k; }
};
MatmulDims matmul_dims(const TensorType& a, const TensorType& b);

// True when a matmul on `dtype` runs on tensor cores of `target` (f16/bf16 and the target has
// them); f32 matmuls and tensor-core-less targets use CUDA cores.
bool on_tensor_cores(DType dtype, const Target& target);

// FP32 instruction slots per counted element of an operator (the op table's `slots`): special-
// function work (exp, reciprocal, sqrt) is weighted by the FP32/SFU throughput ratio (kSfuSlots).
double issue_slots(OpKind kind);
inline constexpr double kSfuSlots = 8.0;

// CUDA-core flops (2 per instruction slot, the unit of Target::cuda_flops_f32) of a non-matmul
// operator of graph `g`, by the op table's cost class: slots per result element (elementwise) or
// per operand element (reductions, accumulators, composites); 0 for data movement, matmuls (priced
// by their own model) and graph-defined operators (priced through their bodies).
double cuda_flops_of(const Graph& g, const Op& op);

inline double tensor_bytes(const TensorType& t) {
  return static_cast<double>(numel(t.shape)) * dtype_bytes(t.dtype);
}

}  // namespace weft
