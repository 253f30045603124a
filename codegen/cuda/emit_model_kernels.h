// The model executor's device kernel library (codegen/cuda/device/model_kernels.cuh): one CUDA
// unit with the prelude, the kernels and the scalar forms of every operator the elementwise kernel
// runs, generated from the operator table, so a new elementwise row needs no edit here.
#pragma once

#include <string>

#include "ir/ops.h"

namespace weft {

// The scalar form of `kind` in the elementwise device kernel: the table's CUDA code for
// elementwise rows (operands {0} {1}, the rational attribute {2}); for the model-only elementwise
// rows (where, pow, abs, reciprocal, log, gelu_tanh, clip, cast) a form given here over operands
// {0} {1} {2} and constants {3} {4}; null for every other operator.
const char* device_scalar_form(OpKind kind);

// The whole unit: prelude, model_kernels.cuh, weft_dk_scalar. Compiles with nvcc and, with
// -DWEFT_HOST_EMULATION, as host C++; exports
// weft_dk_{map,elementwise,rows,gather,matmul,position,generate,window}_launch.
const std::string& model_kernels_source();

}  // namespace weft
