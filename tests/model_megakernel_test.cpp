// A compiled model's function as one persistent kernel (driver/model_megakernel.h) in host
// emulation: the traced plan's outputs against the device executor (bit for bit: the same kernel
// bodies on the same values) and the host VM (rtol 1e-3), µGraph regions and model kernels in one
// task graph; and the plan built from a trace on its own (every launch a kernel, results copied).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <set>

#include <unistd.h>

#include "driver/compile_to_dir.h"
#include "driver/compiled_dir.h"
#include "driver/model_file.h"
#include "driver/model_megakernel.h"
#include "driver/model_megakernel_plan.h"
#include "driver/mpk_run.h"
#include "exec/npz.h"
#include "lower/plan_text.h"
#include "onnx/import.h"
#include "tests/device_kernels_module.h"
#include "tests/model_test_args.h"
#include "tests/test_util.h"
#include "tests/tiers.h"
#include "tests/tiny_llama_dir.h"

WEFT_TEST_TIERS("unit", "loads_generated");
// Two models compiled and emulated: the optimized build's heavy tier (make test-heavy).
WEFT_TEST_TIERS_OF("ModelMegakernelOnnx.*", "heavy");

namespace weft {
namespace {

namespace fs = std::filesystem;

using test::flatten;

// The device-kernels module (tests/device_kernels_module.h) with `all`: every function called
// once, their results in one tuple, so one trace holds every kernel family.
Module all_kernels_module(const std::string& dtype) {
  Module parts = test::kernels_module(dtype);
  std::string params, calls, rets, results;
  for (const Function& f : parts.functions) {
    std::string args;
    for (const Param& p : f.params) {
      params +=
          fmt::format("{}{}_{}: {}", params.empty() ? "" : ", ", f.name, p.name, p.type.str());
      args += fmt::format("{}{}_{}", args.empty() ? "" : ", ", f.name, p.name);
    }
    calls += fmt::format("    r_{} = {}({})\n", f.name, f.name, args);
    rets += fmt::format("{}{}", rets.empty() ? "" : ", ", f.ret.str());
    results += fmt::format("{}r_{}", results.empty() ? "" : ", ", f.name);
  }
  std::string text = test::kKernels;
  for (size_t at; (at = text.find("DT[")) != std::string::npos;) text.replace(at, 2, dtype);
  text += fmt::format(
      "fn all({}) -> tuple({}) {{\n  dataflow {{\n{}    t = tuple({})\n  }}\n  "
      "return t\n}}\n",
      params, rets, calls, results);
  SymProver prover;
  return parse_module(text, "all_kernels.wmod", prover);
}

// Every kernel family of the device executor (movement, elementwise, rows, gathers, matmul,
// positions, generated tensors, windows; f32 and bf16 storage) traced in one run of `all` and run
// as one persistent kernel: its outputs equal the executor's bit for bit, and the plan's text
// round-trips.
class ModelMegakernelFamilies : public testing::TestWithParam<std::string> {};

TEST_P(ModelMegakernelFamilies, OnePersistentKernelRunsEveryFamilyLikeTheExecutor) {
  Module m = all_kernels_module(GetParam());
  const Function& fn = *m.find_function("all");
  std::mt19937_64 rng(11);
  std::vector<VmValue> args;
  for (const Param& p : fn.params) {
    Shape shape;
    for (const SymExpr& d : *p.type.dims) shape.push_back(*d.as_constant());
    Tensor<double> t(shape, 0.0);
    const bool ids = p.name.ends_with("_ids");
    std::uniform_real_distribution<double> u(p.name.starts_with("binary_") ? 0.5 : -2, 2);
    for (double& x : t.data) x = ids ? static_cast<double>(rng() % 3) : u(rng);
    args.emplace_back().v = std::make_shared<Tensor<double>>(std::move(t));
  }
  DeviceVm device(m, Backend::cuda_emulation);
  std::vector<DeviceValue> dev;
  for (size_t i = 0; i < args.size(); ++i) dev.push_back(device.upload(args[i], fn.params[i].type));
  VmValue want = device.download(device.run("all", dev));

  ModelMegakernelOptions options;
  options.workers = 3;
  weft::ModelMegakernel mk = model_megakernel(device, "all", dev, options);
  EXPECT_EQ(mk.ugraph_launches, 0);
  EXPECT_GT(mk.model_kernel_launches, 60);
  // Every dk family is in the plan.
  std::set<int64_t> families;
  for (const KernelPlan& k : mk.program.plan.kernels)
    if (is_device_kernel_call(k.loop_steps.at(0)))
      families.insert(k.loop_steps[0].attrs.get_int("dk"));
  EXPECT_EQ(families.size(), 9u);
  EXPECT_EQ(parse_plan(print_plan(mk.program.plan)), mk.program.plan);

  MegakernelRunner runner(mk.program);
  MpkRunOptions run;
  run.inputs = model_megakernel_inputs(mk, args);
  MpkRunReport report = runner.run(run);
  EXPECT_TRUE(report.same);
  std::vector<const Tensor<double>*> w;
  flatten(want, w);
  ASSERT_EQ(report.outputs.size(), w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    ASSERT_EQ(report.outputs[i].size(), w[i]->data.size()) << "output " << i;
    for (size_t j = 0; j < w[i]->data.size(); ++j) {
      if (std::isnan(w[i]->data[j]) && std::isnan(report.outputs[i][j])) continue;
      ASSERT_EQ(static_cast<double>(report.outputs[i][j]), w[i]->data[j])
          << "output " << i << " element " << j;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, ModelMegakernelFamilies, ::testing::Values("f32", "bf16"));

// An operator without a device kernel at its shapes cannot be in one persistent kernel: the error
// names it and says what runs the model instead.
TEST(ModelMegakernelPlan, AnOperatorOnTheHostIsRefusedByName) {
  SymProver prover;
  Module m = parse_module(R"(module fallback
fn main(x: f32[2, 3]) -> tuple(f32[2, 3], i64[9]) {
  dataflow {
    a = exp(x)
    d = dims_tensor(values=[1, 2, 3, 4, 5, 6, 7, 8, 9])
    t = tuple(a, d)
  }
  return t
}
)",
                          "fallback.wmod", prover);
  DeviceVm device(m, Backend::cuda_emulation);
  std::vector<DeviceValue> dev = {device.upload(
      VmValue{std::make_shared<Tensor<double>>(Shape{2, 3}, 0.5)}, m.functions[0].params[0].type)};
  try {
    model_megakernel(device, "main", dev, {});
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("dims_tensor (1x)"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("weft run DIR"), std::string::npos) << e.message();
  }
}

class ModelMegakernel : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    work_ =
        new fs::path(fs::temp_directory_path() / fmt::format("weft_model_megakernel_{}", getpid()));
    fs::remove_all(*work_);
    test::compile_tiny_llama(*work_, "tiny_llama",
                             {{{"b", 1}, {"n", 3}, {"p", 0}}, {{"b", 2}, {"n", 1}, {"p", 4}}}, 4);
  }
  static void TearDownTestSuite() {
    fs::remove_all(*work_);
    delete work_;
  }
  static inline fs::path* work_ = nullptr;
};

// The persistent kernel of `function` at `args` against the device executor (bit for bit) and
// the host VM (rtol 1e-3).
void check_persistent_kernel(CompiledModelDir& dir, const std::string& function,
                             const std::vector<VmValue>& args) {
  SCOPED_TRACE(function);
  // The host VM (CPU µGraphs) and the device executor in emulation.
  Vm host(dir.compiled(), [] {
    VmOptions o;
    o.ugraph_executor = UGraphExecutor::cpu;
    return o;
  }());
  VmValue want = host.run(function, args);
  DeviceVm& device = dir.device_vm(Backend::cuda_emulation);
  VmValue on_device = device.download(device.run(function, dir.device_arguments(function, args)));

  ModelMegakernelOptions options;
  options.function = function;
  options.workers = 3;
  weft::ModelMegakernel m = model_megakernel(dir, args, options);
  EXPECT_GT(m.model_kernel_launches, 0);
  EXPECT_GT(m.ugraph_launches, 0) << "the compiled module's µGraphs are in the persistent kernel";
  // Every µGraph kernel and model kernel is one plan kernel (plus result copies).
  EXPECT_GE(m.program.plan.kernels.size(), static_cast<size_t>(m.model_kernel_launches));
  EXPECT_EQ(parse_plan(print_plan(m.program.plan)), m.program.plan);
  // Buffers whose uses do not overlap share workspace bytes.
  int64_t separate = 0;
  for (const PlanBuffer& t : m.program.plan.tensors)
    if (t.name.starts_with("buf")) separate += (t.bytes() + 255) / 256 * 256;
  EXPECT_LT(m.program.plan.workspace_bytes, separate);

  MegakernelRunner runner(m.program);
  MpkRunOptions run;
  run.inputs = model_megakernel_inputs(m, args);
  MpkRunReport report = runner.run(run);
  EXPECT_TRUE(report.same) << "the persistent kernel differs from the plan's per-kernel path";

  std::vector<const Tensor<double>*> w, d;
  flatten(want, w);
  flatten(on_device, d);
  ASSERT_EQ(report.outputs.size(), w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    ASSERT_EQ(report.outputs[i].size(), w[i]->data.size());
    double lo = INFINITY, hi = -INFINITY, diff = 0, mag = 1e-30;
    for (size_t j = 0; j < w[i]->data.size(); ++j) {
      lo = std::min(lo, w[i]->data[j]);
      hi = std::max(hi, w[i]->data[j]);
      // Bit for bit against the device executor: the same kernel bodies on the same values.
      EXPECT_EQ(static_cast<double>(report.outputs[i][j]), d[i]->data[j]) << "output " << i;
      diff = std::max(diff, std::abs(report.outputs[i][j] - w[i]->data[j]));
      mag = std::max(mag, std::abs(w[i]->data[j]));
    }
    EXPECT_GT(hi - lo, 1e-3) << "output " << i << " is trivial";
    EXPECT_LT(diff / mag, 1e-3) << "output " << i << " against the host VM";
  }
}

void check_function(const std::string& dir_path, const std::string& function,
                    const SymBinding& binding) {
  CompiledModelDir dir(dir_path);
  check_persistent_kernel(
      dir, function, test::seeded_arguments(*dir.compiled().find_function(function), binding, 7));
}

TEST_F(ModelMegakernel, TinyLlamaPrefillIsOnePersistentKernelEqualToTheExecutors) {
  check_function((*work_ / "tiny_llama").string(), "prefill", {{"b", 1}, {"n", 3}, {"p", 0}});
}

TEST_F(ModelMegakernel, TinyLlamaDecodeStepWithItsCacheIsOnePersistentKernel) {
  check_function((*work_ / "tiny_llama").string(), "decode", {{"b", 2}, {"n", 1}, {"p", 4}});
}

// The committed ONNX transformers compiled for h100 at one binding: main as one persistent kernel,
// its µGraphs and model kernels together.
TEST(ModelMegakernelOnnx, TheExampleTransformersAreEachOnePersistentKernel) {
  if (!onnx_supported()) GTEST_SKIP() << "built without ONNX support";
  fs::path work = fs::temp_directory_path() / fmt::format("weft_megakernel_onnx_{}", getpid());
  fs::remove_all(work);
  for (const char* name : {"bert_tiny", "llama_tiny"}) {
    SymProver prover;
    ModelFile model =
        load_model_file(test::source_path(fmt::format("examples/onnx/{}.onnx", name)), prover, {});
    ModelDirOptions options;
    options.target = "h100";
    options.bindings = {{{"batch", 2}, {"seq", 5}}};
    options.time_budget_s = 4;
    options.state_budget = 100;
    options.no_build = true;
    options.cache_dir = (work / "cache").string();
    const fs::path out = work / name;
    compile_model_to_dir(model, prover, out.string(), options);
    CompiledModelDir dir(out.string());
    std::mt19937_64 rng(3);
    NpzArrays in;
    for (const std::string& n : dir.input_names("main")) {
      Tensor<double> t({2, 5}, 1.0);
      if (n == "input_ids")
        for (double& x : t.data) x = static_cast<double>(rng() % 200);
      else
        t.data.back() = 0.0;  // the last position of the last row is padding
      in[n] = NpyArray{t, false};
    }
    check_persistent_kernel(dir, "main", dir.arguments("main", in, "inputs"));
  }
  fs::remove_all(work);
}

// `weft run DIR --megakernel`: tiny_mlp compiled at one binding, run as one persistent kernel in
// emulation, writes the device executor's results and says what it built; `weft bench DIR
// --megakernel` times it; bad flags are refused.
TEST(ModelMegakernelCli, RunDirAsOnePersistentKernelWritesTheExecutorsResults) {
  fs::path work = fs::temp_directory_path() / fmt::format("weft_megakernel_cli_{}", getpid());
  fs::remove_all(work);
  fs::create_directories(work);
  const std::string dir = (work / "out").string();
  auto [rc, out] = test::run_weft(
      fmt::format("compile {} -o {} --bind b=2,n=3 --target h100 --time-budget 3 --no-build "
                  "--megakernel",
                  test::source_path("tests/model/tiny_mlp.wmod"), dir));
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("megakernel/main.b=2,n=3.plan (one persistent kernel"), std::string::npos)
      << out;
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(-1, 1);
  std::map<std::string, Tensor<double>> in;
  for (const auto& [name, shape] :
       std::vector<std::pair<std::string, Shape>>{{"x", {2, 3, 32}},
                                                  {"g", {1, 1, 32}},
                                                  {"w1", {1, 32, 48}},
                                                  {"w2", {1, 32, 48}},
                                                  {"w3", {1, 48, 32}}}) {
    Tensor<double> t(shape, 0.0);
    for (double& v : t.data) v = u(rng);
    in[name] = t;
  }
  write_npz((work / "in.npz").string(), in);
  const std::string run = fmt::format("run {} --inputs {} ", dir, (work / "in.npz").string());
  std::tie(rc, out) =
      test::run_weft(run + "--outputs " + (work / "mk.npz").string() + " --megakernel --workers 2");
  ASSERT_EQ(rc, 0) << out;
  for (const char* line :
       {"stored for this binding", " plan kernels from ", "µGraph units", "2 workers",
        "outputs equal to its kernels run one by one", "result: [2, 3, 32]"})
    EXPECT_NE(out.find(line), std::string::npos) << line << "\n" << out;
  std::tie(rc, out) =
      test::run_weft(run + "--outputs " + (work / "vm.npz").string() + " --backend cuda-emulation");
  ASSERT_EQ(rc, 0) << out;
  NpzArrays mk = read_npz((work / "mk.npz").string()), vm = read_npz((work / "vm.npz").string());
  ASSERT_EQ(mk.count("result"), 1u);
  EXPECT_EQ(mk.at("result").tensor.data, vm.at("result").tensor.data);
  double lo = INFINITY, hi = -INFINITY;
  for (double v : vm.at("result").tensor.data) lo = std::min(lo, v), hi = std::max(hi, v);
  EXPECT_GT(hi - lo, 0.5);
  // `weft bench DIR --megakernel` times the persistent kernel beside the device-resident run.
  std::tie(rc, out) = test::run_weft(
      fmt::format("bench {} --inputs {} --backend cuda-emulation --megakernel --workers 2 --reps 1 "
                  "--warmup 0",
                  dir, (work / "in.npz").string()));
  ASSERT_EQ(rc, 0) << out;
  for (const char* line : {"one persistent kernel (", "2 workers, the plan DIR stored)",
                           "outputs equal to its kernels run one by one"})
    EXPECT_NE(out.find(line), std::string::npos) << line << "\n" << out;
  std::tie(rc, out) = test::run_weft(
      fmt::format("bench {} --inputs {} --megakernel", dir, (work / "in.npz").string()));
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("give --backend cuda or cuda-emulation"), std::string::npos) << out;
  // At a binding DIR has no plan for, the run is traced.
  in["x"] = Tensor<double>({1, 2, 32}, 0.25);
  write_npz((work / "in1.npz").string(), in);
  std::tie(rc, out) =
      test::run_weft(fmt::format("run {} --inputs {} --outputs {} --megakernel", dir,
                                 (work / "in1.npz").string(), (work / "mk1.npz").string()));
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(out.find("stored for this binding"), std::string::npos) << out;
  EXPECT_NE(out.find("result: [1, 2, 32]"), std::string::npos) << out;
  std::tie(rc, out) = test::run_weft(run + "--outputs x.npz --megakernel --backend cpu");
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("--megakernel runs with --backend cuda or cuda-emulation"), std::string::npos)
      << out;
  fs::remove_all(work);
}

}  // namespace
}  // namespace weft
