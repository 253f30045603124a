// The model pipelines as library calls (driver/): the format choice of load_model_file, the
// binding check, and a directory compile_model_to_dir wrote, loaded by CompiledModelDir and run
// against the uncompiled module. The CLI over them is ModelCompile.Cli*'s, except `weft bench DIR
// --backend` (the device-resident executor), tested here on a GPU directory.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <random>

#include <unistd.h>

#include "driver/compile_to_dir.h"
#include "driver/compiled_dir.h"
#include "driver/model_file.h"
#include "exec/npz.h"
#include "exec/run_io.h"
#include "runtime/cuda_runtime.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit", "loads_generated");
// Minutes under ASan at -O0 (runs in the optimized build: make test-heavy).
WEFT_TEST_TIERS_OF("ModelDir.BenchTimesTheDeviceResidentExecutorAgainstThePerOperatorBaseline",
                   "heavy");

namespace weft {
namespace {

namespace fs = std::filesystem;

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(ModelDir, LoadModelFileChoosesTheFormatByExtension) {
  SymProver prover;
  ModelFile wmod = load_model_file(test::source_path("tests/model/tiny_mlp.wmod"), prover);
  EXPECT_EQ(wmod.module.name, "tiny_mlp");
  EXPECT_FALSE(wmod.imported);
  std::string onnx = test::source_path("examples/onnx/bert_tiny.onnx");
  OnnxImportOptions bounds;
  bounds.bounds["seq"] = 64;
  if (!onnx_supported()) {
    EXPECT_NE(message_of([&] {
                load_model_file(onnx, prover, bounds);
              }).find("built without ONNX support"),
              std::string::npos);
    return;
  }
  ModelFile bert = load_model_file(onnx, prover, bounds);
  ASSERT_TRUE(bert.imported);
  EXPECT_FALSE(bert.imported->weights.empty());
  ASSERT_EQ(bert.imported->inputs.size(), 2u);
  EXPECT_EQ(bert.imported->inputs[0].onnx, "input_ids");
  EXPECT_EQ(bert.module.functions.size(), 1u);
}

TEST(ModelDir, CheckBindingNamesTheVariableAndItsRange) {
  SymProver prover;
  Module m = load_model_file(test::source_path("tests/model/tiny_mlp.wmod"), prover).module;
  EXPECT_NO_THROW(check_binding({{"b", 2}, {"n", 4}}, m));
  EXPECT_NE(message_of([&] {
              check_binding({{"b", 2}, {"q", 1}}, m);
            }).find("'q' is not a symbolic variable of the model (it declares b, n)"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              check_binding({{"b", 65}}, m);
            }).find("b = 65 is not within"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              check_binding({{"n", 0}}, m);
            }).find("n = 0 is not within"),
            std::string::npos);
}

// tiny_mlp's compile options at one binding, its cache under `work`, a short search.
ModelDirOptions mlp_options(const fs::path& work, const SymBinding& binding) {
  ModelDirOptions options;
  options.bindings = {binding};
  options.time_budget_s = 4;
  options.state_budget = 200;
  options.cache_dir = (work / "cache").string();
  return options;
}

// Uniform [-1, 1) arrays for `fn`'s parameters at `at`, seeded.
NpzArrays random_arguments(const Function& fn, const SymBinding& at, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(-1, 1);
  NpzArrays inputs;
  for (const Param& p : fn.params) {
    Shape shape;
    for (const SymExpr& d : *p.type.dims) shape.push_back(evaluate(d, at));
    Tensor<double> t(shape, 0.0);
    for (double& x : t.data) x = uniform(rng);
    inputs[p.name] = NpyArray{t, false};
  }
  return inputs;
}

TEST(ModelDir, ACompiledDirectoryRunsAsTheUncompiledModule) {
  fs::path work = fs::temp_directory_path() / fmt::format("weft_model_dir_{}", getpid());
  fs::remove_all(work);
  SymProver prover;
  ModelFile model = load_model_file(test::source_path("tests/model/tiny_mlp.wmod"), prover);
  ModelDirOptions options = mlp_options(work, {{"b", 2}, {"n", 4}});
  {  // No bindings for a dynamic model: written unspecialized, saying how to add shapes.
    ModelDirOptions none = options;
    none.bindings.clear();
    ModelDirReport r = compile_model_to_dir(model, prover, (work / "none").string(), none);
    EXPECT_EQ(r.ugraphs, 0);
    EXPECT_NE(r.unspecialized_note.find("per-operator path; add superoptimized shapes with --bind "
                                        "b=N,n=N"),
              std::string::npos)
        << r.unspecialized_note;
    EXPECT_TRUE(is_compiled_model_dir((work / "none").string()));
  }
  ModelDirReport report = compile_model_to_dir(model, prover, (work / "out").string(), options);
  EXPECT_GT(report.ugraphs, 0);
  EXPECT_EQ(report.built, report.ugraphs);
  EXPECT_EQ(report.summary["totals"]["regions"].get<size_t>(), report.result.regions.size());
  ASSERT_TRUE(is_compiled_model_dir((work / "out").string()));
  EXPECT_FALSE(is_compiled_model_dir(work.string()));

  CompiledModelDir dir((work / "out").string());
  EXPECT_EQ(dir.bindings(), options.bindings);
  EXPECT_EQ(dir.input_names("main"), (std::vector<std::string>{"x", "g", "w1", "w2", "w3"}));
  NpzArrays inputs =
      random_arguments(function_to_run(model.module, "main", SourceLoc{}), options.bindings[0], 7);
  auto got = dir.run("main", inputs, "inputs");
  Vm reference(model.module);
  auto want = result_arrays(reference.run("main", dir.arguments("main", inputs, "inputs")));
  ASSERT_EQ(got.size(), 1u);
  const Tensor<double>& g = got.at("result");
  const Tensor<double>& w = want.at("result");
  ASSERT_EQ(g.shape, w.shape);
  double scale = 0, worst = 0;
  for (double x : w.data) scale = std::max(scale, std::abs(x));
  ASSERT_GT(scale, 0.1) << "the reference output must not be trivial";
  for (size_t i = 0; i < w.data.size(); ++i)
    worst = std::max(worst, std::abs(g.data[i] - w.data[i]));
  EXPECT_LE(worst / scale, 1e-4);
  inputs.erase("w3");
  EXPECT_NE(message_of([&] { dir.run("main", inputs, "inputs"); }).find("w3"), std::string::npos);
  fs::remove_all(work);
}

// A directory compiled for a GPU target runs its µGraphs as the generated CUDA (in host emulation
// here, on the device with the cuda executor): the same results as the uncompiled module. The
// directory's code is not built with nvcc (no_build): the executor builds what it runs.
TEST(ModelDir, AGpuDirectoryRunsItsGeneratedCudaInEmulation) {
  fs::path work = fs::temp_directory_path() / fmt::format("weft_model_dir_gpu_{}", getpid());
  fs::remove_all(work);
  SymProver prover;
  ModelFile model = load_model_file(test::source_path("tests/model/tiny_mlp.wmod"), prover);
  ModelDirOptions options = mlp_options(work, {{"b", 1}, {"n", 8}});
  options.target = "h100";
  options.no_build = true;
  ModelDirReport report = compile_model_to_dir(model, prover, (work / "out").string(), options);
  ASSERT_GT(report.ugraphs, 0);
  CompiledModelDir dir((work / "out").string());
  EXPECT_EQ(dir.target(), "h100");
  NpzArrays inputs =
      random_arguments(function_to_run(model.module, "main", SourceLoc{}), options.bindings[0], 11);
  Vm reference(model.module);
  const Tensor<double> want =
      result_arrays(reference.run("main", dir.arguments("main", inputs, "inputs"))).at("result");
  double scale = 0;
  for (double x : want.data) scale = std::max(scale, std::abs(x));
  ASSERT_GT(scale, 0.1) << "the reference output must not be trivial";
  for (UGraphExecutor executor : {UGraphExecutor::cuda_emulation, UGraphExecutor::cpu}) {
    const Tensor<double> got = dir.run("main", inputs, "inputs", executor).at("result");
    ASSERT_EQ(got.shape, want.shape);
    double worst = 0;
    for (size_t i = 0; i < want.data.size(); ++i)
      worst = std::max(worst, std::abs(got.data[i] - want.data[i]));
    EXPECT_LE(worst / scale, 1e-4) << static_cast<int>(executor);
  }
  fs::remove_all(work);
}

// `weft bench DIR --backend cuda-emulation` adds the device-resident executor's times, labelled as
// emulation, against the per-operator baseline lowered for the GPU, with the executor's counts
// and the outputs' agreement; --backend cuda without a GPU is refused with the reason.
TEST(ModelDir, BenchTimesTheDeviceResidentExecutorAgainstThePerOperatorBaseline) {
  fs::path work = fs::temp_directory_path() / fmt::format("weft_model_dir_bench_{}", getpid());
  fs::remove_all(work);
  SymProver prover;
  ModelFile model = load_model_file(test::source_path("tests/model/tiny_mlp.wmod"), prover);
  ModelDirOptions options = mlp_options(work, {{"b", 2}, {"n", 4}});
  options.target = "h100";
  options.no_build = true;
  compile_model_to_dir(model, prover, (work / "out").string(), options);
  write_npz((work / "in.npz").string(), [&] {
    std::map<std::string, Tensor<double>> arrays;
    for (const auto& [name, a] : random_arguments(
             function_to_run(model.module, "main", SourceLoc{}), options.bindings[0], 5))
      arrays[name] = a.tensor;
    return arrays;
  }());
  const std::string bench = fmt::format("bench {} --inputs {} --reps 2 --warmup 1 --backend ",
                                        (work / "out").string(), (work / "in.npz").string());
  auto [rc, out] = test::run_weft(bench + "cuda-emulation");
  EXPECT_EQ(rc, 0) << out;
  for (const char* line :
       {"uncompiled, per-operator CPU kernels",
        "device-resident on cuda-emulation (emulation: "
        "host wall time of the CUDA code run on the host, "
        "not GPU times)",
        "uncompiled, per-operator kernels", "over per-operator kernels)",
        // The device executor's counters (host fallbacks among them) are reported.
        "host fallbacks over", "outputs vs the uncompiled module: scaled error"})
    EXPECT_NE(out.find(line), std::string::npos) << line << "\n" << out;
  EXPECT_EQ(out.find("DIFFER"), std::string::npos) << out;
  EXPECT_EQ(out.find("CUDA events"), std::string::npos) << out;
  if (std::string why = cuda_unavailable_reason(); !why.empty()) {
    auto [rc2, out2] = test::run_weft(bench + "cuda");
    EXPECT_EQ(rc2, 1) << out2;
    EXPECT_NE(out2.find("error:"), std::string::npos) << out2;
  }
  fs::remove_all(work);
}

}  // namespace
}  // namespace weft
