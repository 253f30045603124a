// The program interface (runtime/program.h): one factory from the backend enum, and the same
// load / run / time contract on every backend that runs here (cpu, cuda-emulation; the cuda
// backend's run and time are tested in cuda_runtime_test.cpp).
#include <gtest/gtest.h>

#include <filesystem>

#include "core/target.h"
#include "interp/compare.h"
#include "interp/interpreter.h"
#include "interp/random_inputs.h"
#include "lower/pipeline.h"
#include "runtime/host_tensors.h"
#include "runtime/program.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit", "loads_generated");

namespace weft {
namespace {

Graph small(const std::string& name) {
  return test::load_graph_file(test::source_path("tests/golden/lower/" + name));
}

TEST(Program, BackendNamesRoundTrip) {
  ASSERT_EQ(all_backends().size(), 3u);
  for (Backend b : all_backends()) EXPECT_EQ(backend_by_name(backend_name(b)), b);
  EXPECT_EQ(backend_name(Backend::cuda_emulation), "cuda-emulation");
  EXPECT_FALSE(backend_by_name("interp").has_value());
  EXPECT_EQ(backend_target_kind(Backend::cpu), TargetKind::cpu);
  EXPECT_EQ(backend_target_kind(Backend::cuda), TargetKind::gpu);
  EXPECT_EQ(backend_target_kind(Backend::cuda_emulation), TargetKind::gpu);
  EXPECT_EQ(source_extension(Backend::cpu), ".cpp");
  EXPECT_EQ(source_extension(Backend::cuda_emulation), ".cu");
}

// Both host backends through the base class only: the outputs match the interpreter, timing
// repeats as asked, and bad inputs are the user's error.
TEST(Program, HostBackendsShareOneInterface) {
  Graph g = small("gated_mlp.fused.weft");
  auto inputs = random_inputs(g, 5);
  for (auto [backend, target] :
       {std::pair{Backend::cpu, "cpu"}, std::pair{Backend::cuda_emulation, "h100"}}) {
    SCOPED_TRACE(backend_name(backend));
    std::unique_ptr<Program> prog = compile_program(g, target_by_name(target), backend);
    EXPECT_EQ(prog->backend(), backend);
    EXPECT_EQ(prog->plan().target, target);
    EXPECT_EQ(prog->source(), generate_source(prog->plan(), backend));
    EXPECT_TRUE(std::filesystem::exists(prog->artifact())) << prog->artifact();
    auto in = inputs;
    if (backend == Backend::cuda_emulation) round_to_input_dtypes(g, in);
    auto got = output_tensors(prog->plan(), prog->run(host_buffers_of(in)));
    auto want = evaluate_real(g, in, /*f32=*/false);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      // The cpu backend computes in f32; the GPU code in the declared dtypes.
      double tol = backend == Backend::cpu ? tolerance_for(/*f32=*/true)
                                           : tolerance_for(g.type(g.outputs[i]).dtype);
      Comparison c = compare_outputs(got[i], want[i], tol);
      EXPECT_GT(c.max_ref, 0);
      EXPECT_TRUE(c.ok) << "output " << i << ": scaled error " << c.scaled_error;
    }
    Timing t = prog->time(host_buffers_of(in), 1, 3);
    EXPECT_EQ(t.reps, 3);
    EXPECT_LE(t.min_s, t.median_s);
    EXPECT_LE(t.median_s, t.max_s);
    std::vector<std::vector<float>> short_input = host_buffers_of(in);
    short_input[0].pop_back();
    EXPECT_THROW(prog->run(short_input), UserError);
    EXPECT_THROW(prog->time(short_input, 0, 1), UserError);
    EXPECT_THROW(prog->run({}), UserError);
    EXPECT_THROW(prog->time(host_buffers_of(in), 0, 0), InternalError);
    // The same plan loads again from the cache.
    EXPECT_TRUE(load_program(prog->plan(), backend)->from_cache());
  }
}

TEST(Program, TheFactoryRefusesTargetsOfTheOtherKind) {
  Graph g = small("gated_mlp.weft");
  EXPECT_THROW(compile_program(g, target_by_name("h100"), Backend::cpu), UserError);
  EXPECT_THROW(compile_program(g, target_by_name("cpu"), Backend::cuda_emulation), UserError);
  EXPECT_THROW(compile_program(g, target_by_name("cpu"), Backend::cuda), UserError);
  ProgramPlan cpu = lower_graph(g, target_by_name("cpu"));
  EXPECT_THROW(load_program(cpu, Backend::cuda_emulation), UserError);
  ProgramPlan gpu = lower_graph(g, target_by_name("a100"));
  EXPECT_THROW(build_program(gpu, Backend::cpu, generate_source(gpu, Backend::cuda)), UserError);
}

}  // namespace
}  // namespace weft
