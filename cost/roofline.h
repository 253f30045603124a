// The roofline floor of an input program: the time no µGraph of it can beat on a target.
#pragma once

#include "core/target.h"
#include "ir/graph.h"

namespace weft {

// The input program's floor: max(unavoidable bytes / bandwidth, minimal flops / peak). Unavoidable
// bytes are the program inputs read once plus its outputs written once; minimal flops are its
// matmuls' (elementwise and reduction work can shrink under rewriting, so it is not counted).
// Rates are the target's sustained ones (dram_bytes_per_s, tensor_flops_f16, cuda_flops_f32).
struct Roofline {
  double bytes = 0;
  double tensor_flops = 0;  // matmul flops on tensor cores (f16/bf16 operands), unpadded
  double cuda_flops = 0;    // matmul flops on CUDA cores (f32 operands, or no tensor cores)
  double memory_s = 0;
  double compute_s = 0;
  double floor_s = 0;
};
Roofline roofline(const Graph& input_program, const Target& target);
double roofline_floor(const Graph& input_program, const Target& target);

}  // namespace weft
