// Conversions between the interpreter's tensors (f64) and the flat f32 host buffers every backend
// runs on, in a plan's input and output order.
#pragma once

#include <vector>

#include "core/tensor.h"
#include "ir/graph.h"
#include "lower/plan.h"

namespace weft {

std::vector<std::vector<float>> host_buffers_of(const std::vector<Tensor<double>>& tensors);

// Rounds each of `g`'s input tensors to its declared dtype, as a GPU stores it, so a reference
// computed from them sees the values the device computes with.
void round_to_input_dtypes(const Graph& g, std::vector<Tensor<double>>& inputs);

// The backend's outputs as tensors shaped like the plan's outputs.
std::vector<Tensor<double>> output_tensors(const ProgramPlan& plan,
                                           const std::vector<std::vector<float>>& outputs);

}  // namespace weft
