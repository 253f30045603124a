// The model executor's device kernel library (codegen/cuda/device/model_kernels.cuh): one CUDA
// unit with the prelude, the kernels and weft_dk_scalar, the CUDA form of every elementwise row
// of the operator table (µGraph rows and model-only ones), generated from the rows, so a new
// elementwise row needs no edit here.
#pragma once

#include <string>

namespace weft {

// The whole unit: prelude, model_kernels.cuh, weft_dk_scalar. Compiles with nvcc and, with
// -DWEFT_HOST_EMULATION, as host C++; exports
// weft_dk_{map,elementwise,rows,gather,matmul,position,generate,window}_launch.
const std::string& model_kernels_source();

// The same kernels' bodies alone (weft_dk_*_body, the argument structs, weft_dk_scalar), without
// the prelude, kernels or entry points: text for a unit that has the prelude and runs the bodies
// on its own threads (a persistent kernel's task bodies).
const std::string& model_kernel_bodies_source();

}  // namespace weft
