// The driver's compile, run and measure calls (driver/compile.h, run.h, measure.h) and the CLI
// commands printing their results (weft compile / run / bench), on the backends that run here.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/target.h"
#include "driver/compile.h"
#include "driver/measure.h"
#include "driver/run.h"
#include "interp/random_inputs.h"
#include "lower/pipeline.h"
#include "lower/plan_text.h"
#include "runtime/cuda_runtime.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit", "loads_generated");

namespace weft {
namespace {

std::string small_path(const std::string& name) {
  return test::source_path("tests/golden/lower/" + name);
}
Graph small(const std::string& name) {
  return test::load_graph_file(small_path(name));
}

RunOptions run_options(std::optional<Backend> backend, const std::string& target = "",
                       bool f32 = true) {
  RunOptions o;
  o.backend = backend;
  o.target = target;
  o.f32 = f32;
  return o;
}

MeasureOptions measure_options(Backend backend, int reps) {
  MeasureOptions o;
  o.backend = backend;
  o.seed = 4;
  o.warmup = 0;
  o.reps = reps;
  return o;
}

TEST(DriverCompile, StopsAfterAPassWithoutCode) {
  Graph g = small("gqa_attention.fused.weft");
  CompiledCode early = compile_graph(g, target_by_name("cpu"), {.stop_after = "schedule"});
  EXPECT_FALSE(early.has_code);
  EXPECT_TRUE(early.source.empty());
  EXPECT_EQ(early.plan_text, print_plan(lower_graph(g, target_by_name("cpu"), "schedule")));
  EXPECT_THROW(compile_graph(g, target_by_name("cpu"), {.stop_after = "nope"}), UserError);
  CompiledCode cpu = compile_graph(g, target_by_name("cpu"));
  EXPECT_TRUE(cpu.has_code);
  EXPECT_EQ(cpu.backend, Backend::cpu);
  EXPECT_EQ(cpu.source_extension, ".cpp");
  EXPECT_EQ(cpu.source, generate_source(cpu.plan, Backend::cpu));
  CompiledCode gpu =
      compile_graph(g, target_by_name("a100"), {.stop_after = lowering_passes().back()});
  EXPECT_TRUE(gpu.has_code);
  EXPECT_EQ(gpu.backend, Backend::cuda);
  EXPECT_EQ(gpu.source_extension, ".cu");
  EXPECT_NE(gpu.source.find("k0_block("), std::string::npos);
}

TEST(DriverCompile, BuildsCpuCodeAndSaysWhyCudaWasNot) {
  CompiledCode cpu = compile_graph(small("movement.fused.weft"), target_by_name("cpu"));
  BuildReport first = build_code(cpu);
  EXPECT_TRUE(first.built);
  EXPECT_TRUE(std::filesystem::exists(first.artifact));
  EXPECT_TRUE(build_code(cpu).from_cache);
  if (!cuda_runtime_built()) {
    CompiledCode gpu = compile_graph(small("movement.fused.weft"), target_by_name("h100"));
    BuildReport r = build_code(gpu);
    EXPECT_FALSE(r.built);
    EXPECT_NE(r.skipped.find("without the CUDA toolkit"), std::string::npos);
  }
  CompiledCode early =
      compile_graph(small("movement.fused.weft"), target_by_name("cpu"), {.stop_after = "build"});
  EXPECT_THROW(build_code(early), InternalError);
}

// The interpreter, the cpu backend and the CUDA code in emulation compute the same outputs;
// backends report their steps to the progress callback.
TEST(DriverRun, ExecutorsAgree) {
  Graph g = small("rms_norm_linear.fused.weft");
  auto inputs = random_inputs(g, 2);
  auto reference = run_graph(g, inputs, run_options(std::nullopt, "", /*f32=*/false));
  for (Backend b : {Backend::cpu, Backend::cuda_emulation}) {
    SCOPED_TRACE(backend_name(b));
    std::vector<std::string> steps;
    RunOptions options = run_options(b);
    options.progress = [&](const std::string& s) { steps.push_back(s); };
    auto got = run_graph(g, inputs, options);
    ASSERT_EQ(got.size(), reference.size());
    for (size_t i = 0; i < got.size(); ++i) {
      // Inputs are not rounded to their dtypes here, so the GPU code's error is the inputs'.
      Comparison c = compare_outputs(got[i], reference[i], 0.05);
      EXPECT_TRUE(c.ok) << "output " << i << ": scaled error " << c.scaled_error;
    }
    EXPECT_EQ(steps.size(), 2u);
  }
  EXPECT_THROW(run_graph(g, inputs, run_options(std::nullopt, "h100")), UserError);
  EXPECT_THROW(run_graph(g, inputs, run_options(Backend::cpu, "h100")), UserError);
  EXPECT_EQ(backend_target(Backend::cuda_emulation, "").name, "h100");
  EXPECT_EQ(backend_target(Backend::cuda_emulation, "a100").name, "a100");
  if (!cuda_unavailable_reason().empty()) {
    EXPECT_THROW(require_backend(Backend::cuda), UserError);
  }
}

TEST(DriverRun, ComparesProgramsOnTheSameInputs) {
  Graph fused = small("gated_mlp.fused.weft"), unfused = small("gated_mlp.weft");
  RunOptions interp = run_options(std::nullopt, "", /*f32=*/false);
  ProgramComparison c = compare_programs(fused, "a", unfused, "b", 3, interp);
  EXPECT_TRUE(c.all_ok);
  ASSERT_EQ(c.outputs.size(), fused.outputs.size());
  EXPECT_EQ(c.outputs[0].comparison.tolerance, tolerance_for(/*f32=*/false));
  EXPECT_GT(c.outputs[0].comparison.max_ref, 0);
  EXPECT_EQ(output_tolerance(run_options(Backend::cuda_emulation), DType::f16),
            tolerance_for(DType::f16));
  EXPECT_EQ(output_tolerance(run_options(Backend::cpu), DType::f16), tolerance_for(true));
  // Different signatures cannot be compared.
  Graph other = small("gqa_attention.weft");
  EXPECT_THROW(compare_programs(fused, "a", other, "c", 3, interp), UserError);
}

TEST(DriverRun, SummarizesOutputs) {
  Tensor<double> t(Shape{5}, {1, -2, 3, 0.5, 2.5});
  OutputSummary s = summarize_output(t);
  EXPECT_EQ(s.count, 5);
  EXPECT_EQ(s.min, -2);
  EXPECT_EQ(s.max, 3);
  EXPECT_DOUBLE_EQ(s.mean, 1.0);
  EXPECT_DOUBLE_EQ(s.l2, std::sqrt(1 + 4 + 9 + 0.25 + 6.25));
  EXPECT_EQ(s.first, (std::vector<double>{1, -2, 3, 0.5}));
  Tensor<double> u = t;
  u.data[4] = 2.25;
  EXPECT_NE(summarize_output(u).checksum, s.checksum);
  EXPECT_EQ(summarize_output(t).checksum, s.checksum);
}

TEST(DriverMeasure, TimesChecksAndComparesOnTheHost) {
  Graph fused = small("gated_mlp.fused.weft"), unfused = small("gated_mlp.weft");
  EXPECT_THROW(prepare_measurement(measure_options(Backend::cpu, 0)), UserError);
  for (Backend b : {Backend::cpu, Backend::cuda_emulation}) {
    SCOPED_TRACE(backend_name(b));
    MeasureSetup setup = prepare_measurement(measure_options(b, 2));
    EXPECT_EQ(setup.target->kind, backend_target_kind(b));
    Measurement a = measure_graph(fused, setup);
    EXPECT_EQ(a.timing.reps, 2);
    ASSERT_EQ(a.outputs.size(), fused.outputs.size());
    InterpreterCheck check = check_against_interpreter(fused, a, setup);
    EXPECT_TRUE(check.matches) << check.scaled_error;
    EXPECT_GT(check.tolerance, 0);
    Measurement m = measure_graph(unfused, setup);
    Agreement agree = compare_measurements(fused, "a", a, "b", m, setup);
    EXPECT_TRUE(agree.outputs_agree);
    EXPECT_GT(agree.speedup, 0);
    // A wrong result is caught.
    Measurement wrong = a;
    wrong.outputs[0][0] += 1.0f;
    EXPECT_FALSE(check_against_interpreter(fused, wrong, setup).matches);
    EXPECT_FALSE(compare_measurements(fused, "a", wrong, "b", m, setup).outputs_agree);
    Measurement fewer = m;
    fewer.outputs.clear();
    EXPECT_THROW(compare_measurements(fused, "a", a, "b", fewer, setup), UserError);
    BenchReport report{setup,
                       {"a.weft", fused.name, a.timing},
                       check,
                       TimedProgram{"b.weft", unfused.name, m.timing},
                       agree};
    nlohmann::ordered_json j = bench_json(report);
    std::vector<std::string> keys;
    for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
    EXPECT_EQ(keys, (std::vector<std::string>{"backend", "target", "device", "seed", "warmup",
                                              "reps", "program", "check", "compare", "speedup",
                                              "outputs_agree"}));
    EXPECT_EQ(j["backend"], std::string(backend_name(b)));
    EXPECT_EQ(j["check"]["matches_interpreter"], true);
    EXPECT_EQ(bench_json({setup, {"a.weft", fused.name, a.timing}, {}, {}, {}}).size(), 7u);
  }
}

// The CLI prints what the driver returns; the CUDA code runs on the host with cuda-emulation.
TEST(DriverCli, RunAndBenchTakeTheEmulatedCudaBackend) {
  auto [rc, out] =
      test::run_weft("run " + small_path("gated_mlp.fused.weft") +
                     " --backend cuda-emulation --compare " + small_path("gated_mlp.weft"));
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("computed in the declared dtypes in CUDA host emulation"), std::string::npos)
      << out;
  EXPECT_NE(out.find("within tolerance"), std::string::npos) << out;
  std::tie(rc, out) = test::run_weft("bench " + small_path("rms_norm_linear.fused.weft") +
                                     " --backend cuda-emulation --target a100 --check --json");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("\"matches_interpreter\": true"), std::string::npos) << out;
  EXPECT_NE(out.find("\"target\": \"a100\""), std::string::npos) << out;
  std::tie(rc, out) =
      test::run_weft("bench " + small_path("gated_mlp.weft") + " --backend cpu --target h100");
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("--target chooses the GPU"), std::string::npos) << out;
  std::tie(rc, out) = test::run_weft("run " + small_path("gated_mlp.weft") + " --seed 1");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("checksum "), std::string::npos) << out;
}

}  // namespace
}  // namespace weft
