// Host-buffer conversions shared by the CPU and CUDA runtimes.
#include "runtime/host_tensors.h"

#include "core/dtype_convert.h"
#include "core/error.h"

namespace weft {

std::vector<std::vector<float>> host_buffers_of(const std::vector<Tensor<double>>& tensors) {
  std::vector<std::vector<float>> out;
  for (const auto& t : tensors) out.emplace_back(t.data.begin(), t.data.end());
  return out;
}

void round_to_input_dtypes(const Graph& g, std::vector<Tensor<double>>& inputs) {
  WEFT_CHECK(inputs.size() == g.inputs.size(), "{} input tensors for {} inputs", inputs.size(),
             g.inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    DType dtype = g.type(g.inputs[i]).dtype;
    for (double& v : inputs[i].data) v = round_to_dtype(static_cast<float>(v), dtype);
  }
}

std::vector<Tensor<double>> output_tensors(const ProgramPlan& plan,
                                           const std::vector<std::vector<float>>& outputs) {
  std::vector<Tensor<double>> result;
  for (size_t i = 0; i < outputs.size(); ++i)
    result.emplace_back(plan.find_tensor(plan.outputs.at(i))->shape,
                        std::vector<double>(outputs[i].begin(), outputs[i].end()));
  return result;
}

}  // namespace weft
