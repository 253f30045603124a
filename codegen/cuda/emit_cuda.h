// CUDA backend, code generation: a kernel plan to one self-contained CUDA translation unit.
#pragma once

#include <string>

#include "lower/plan.h"

namespace weft {

// The generated unit holds the prelude (codegen/cuda/prelude.h); for each graph-defined kernel K
// its block graph as `WEFT_BLOCK_FN void K_block(tensors..., bx, by, bz, smem)` (a __device__
// function of the block's coordinates and shared-memory base), the constants K_threads,
// K_smem_bytes, K_grid_x/y/z, and a thin __global__ K calling K_block (docs/cuda-backend.md, "Block
// functions"); one grid-stride __global__ per library elementwise / reduction / movement kernel;
// and the host entry points
//   extern "C" int weft_cuda_launch(void* const* inputs, void* const* outputs, void* workspace,
//                                   void* stream);
//   extern "C" const char* weft_cuda_plan_name(void);
// inputs / outputs are device pointers in the plan's input / output order, row-major, each in
// its tensor's plan dtype; workspace holds plan.workspace_bytes; the result is 0 or the first
// cudaError_t met (cuBLAS failures report cudaErrorUnknown). Library matmuls call
// cublasGemmStridedBatchedEx (link with -lcublas). Compiled as C++20 with -DWEFT_HOST_EMULATION
// (and without nvcc) the same text defines the same entry points over host pointers.
// The plan must be fully lowered for a GPU target.
std::string emit_cuda_source(const ProgramPlan& plan);

// The C++ type generated code stores a dtype's elements as (float, weft_f16, weft_bf16).
const char* cuda_ctype(DType d);

}  // namespace weft
