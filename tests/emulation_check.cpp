// Generated code against the reference interpreter (see emulation_check.h).
#include "tests/emulation_check.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/target.h"
#include "interp/interpreter.h"
#include "interp/random_inputs.h"
#include "runtime/host_tensors.h"
#include "runtime/program.h"

namespace weft::test {

std::vector<Comparison> compare_emulation(const Graph& reference, const ProgramPlan& plan,
                                          const Program& prog, uint64_t seed) {
  auto inputs = random_inputs(reference, seed);
  round_to_input_dtypes(reference, inputs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto [lo, hi] = std::minmax_element(inputs[i].data.begin(), inputs[i].data.end());
    EXPECT_LT(*lo, *hi) << "constant input " << plan.inputs.at(i);
  }
  auto got = prog.run(host_buffers_of(inputs));
  auto want = evaluate_real(reference, inputs, /*f32=*/false);
  EXPECT_EQ(got.size(), want.size());
  std::vector<Comparison> out;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    DType d = plan.find_tensor(plan.outputs[i])->dtype;
    Tensor<double> gt(want[i].shape, std::vector<double>(got[i].begin(), got[i].end()));
    out.push_back(compare_outputs(gt, want[i], tolerance_for(d)));
    EXPECT_GT(out.back().max_ref, 0) << "trivial reference output " << i;
  }
  return out;
}

void expect_cpu_backend_matches_interpreter(const Graph& g, uint64_t seed) {
  auto inputs = random_inputs(g, seed);
  std::vector<std::vector<float>> in;
  for (const auto& t : inputs) in.emplace_back(t.data.begin(), t.data.end());
  auto got = compile_program(g, target_by_name("cpu"), Backend::cpu)->run(in);
  auto want = evaluate_real(g, inputs, /*f32=*/false);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    Tensor<double> gt(want[i].shape, std::vector<double>(got[i].begin(), got[i].end()));
    Comparison c = compare_outputs(gt, want[i], /*f32=*/true);
    EXPECT_GT(c.max_ref, 0) << "trivial reference output";
    EXPECT_TRUE(c.ok) << g.name << ": scaled error " << c.scaled_error;
  }
}

}  // namespace weft::test
