// The device-resident model executor (exec/device_vm.h) in host emulation: every device kernel
// against the host VM's operator on non-trivial inputs (f32 and bf16 storage), host fallbacks
// counted and correct, graph capture (emulated as CUDA stream capture, and on a GPU) keeping every
// buffer a captured run allocated, and the committed transformer models compiled at two shapes
// run on the device path like the CPU path with no operator on the host.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include <unistd.h>

#include "codegen/cuda/device/model_kernel_args.cuh"
#include "codegen/cuda/emit_model_kernels.h"
#include "driver/compile_to_dir.h"
#include "driver/compiled_dir.h"
#include "driver/model_file.h"
#include "exec/device_vm.h"
#include "model/parser.h"
#include "onnx/import.h"
#include "runtime/cuda_runtime.h"
#include "tests/device_kernels_module.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit", "loads_generated");
WEFT_TEST_TIERS_OF("DeviceVm.OnAGpu*", "gpu");
// Minutes under ASan at -O0 (runs in the optimized build: make test-heavy).
WEFT_TEST_TIERS_OF("DeviceVm.CompiledTransformersRunDeviceResidentLikeTheCpuPathAtTwoShapes",
                   "heavy");

namespace weft {
namespace {

namespace fs = std::filesystem;

// Random values of `t`'s shape: uniform in [lo, hi), or integers in [0, ints) when ints > 0.
VmValue random_tensor(const Shape& shape, std::mt19937_64& rng, double lo = -2, double hi = 2,
                      int ints = 0) {
  Tensor<double> t(shape, 0.0);
  std::uniform_real_distribution<double> u(lo, hi);
  std::uniform_int_distribution<int> k(0, std::max(ints - 1, 0));
  for (double& x : t.data) x = ints > 0 ? k(rng) : u(rng);
  return VmValue{std::make_shared<Tensor<double>>(std::move(t))};
}

// The largest |a - b| over the largest |b| (every leaf of a tuple).
double scaled_error(const VmValue& a, const VmValue& b) {
  if (const VmTuple* ta = a.tuple()) {
    double e = 0;
    for (size_t i = 0; i < ta->size(); ++i)
      e = std::max(e, scaled_error((*ta)[i], (*b.tuple())[i]));
    return e;
  }
  const Tensor<double>&x = *a.tensor(), &y = *b.tensor();
  EXPECT_EQ(x.shape, y.shape);
  double diff = 0, mag = 1e-30;
  for (size_t i = 0; i < x.data.size(); ++i) {
    diff = std::max(diff, std::abs(x.data[i] - y.data[i]));
    if (std::isnan(x.data[i]) != std::isnan(y.data[i])) diff = INFINITY;
    mag = std::max(mag, std::abs(y.data[i]));
  }
  return diff / mag;
}

double spread(const VmValue& v) {
  const Tensor<double>& t = *v.tensor();
  auto [lo, hi] = std::minmax_element(t.data.begin(), t.data.end());
  return *hi - *lo;
}

class DeviceKernels : public ::testing::TestWithParam<std::string> {};

TEST_P(DeviceKernels, EveryKernelMatchesTheHostVm) {
  Module m = test::kernels_module(GetParam());
  Vm host(m);
  DeviceVm device(m, Backend::cuda_emulation);
  std::mt19937_64 rng(15);
  // bf16 stores 8 bits of mantissa: both sides round each stored tensor, but not always alike.
  const double tol = GetParam() == "f32" ? 2e-5 : 3e-2;
  for (const Function& fn : m.functions) {
    std::vector<VmValue> args;
    for (const Param& p : fn.params) {
      Shape s;
      for (const SymExpr& d : *p.type.dims) s.push_back(*d.as_constant());
      bool ids = p.name == "ids";
      args.push_back(
          random_tensor(s, rng, fn.name == "binary" && p.name != "y" ? 0.5 : -2, 2, ids ? 3 : 0));
      ASSERT_GT(spread(args.back()), ids ? 1.5 : 0.5) << fn.name << " " << p.name;
    }
    VmValue want = host.run(fn.name, args);
    int64_t before = device.stats().kernel_launches;
    VmValue got = device.run_host(fn.name, args);
    EXPECT_LE(scaled_error(got, want), tol) << fn.name << " in " << GetParam();
    EXPECT_GT(device.stats().kernel_launches, before) << fn.name;
  }
  EXPECT_EQ(device.stats().host_fallbacks, 0)
      << (device.stats().host_fallback_ops.empty()
              ? ""
              : device.stats().host_fallback_ops.begin()->first);
  EXPECT_EQ(device.stats().ugraph_launches, 0);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, DeviceKernels, ::testing::Values("f32", "bf16"));

// A call_lib runs as the table operator whose rule it follows (cpu.gemm: the matmul kernel); an
// operator the device kernels cannot take (dims_tensor of more values than an argument struct
// holds) runs on the host between device kernels, counted, with the same result.
TEST(DeviceVm, ALibraryCallRunsOnTheDeviceAndAHostFallbackIsCounted) {
  SymProver prover;
  Module m = parse_module(R"(module fallback
fn main(x: f32[6, 8], w: f32[8, 5]) -> tuple(f32[6, 5], i64[9]) {
  dataflow {
    a = exp(x)
    r = rope(a, offset=3)
    g = call_lib(cpu.gemm, r, w)
    s = softmax_safe(g, dim=1)
    d = dims_tensor(values=[1, 2, 3, 4, 5, 6, 7, 8, 9])
    t = tuple(s, d)
  }
  return t
}
)",
                          "fallback.wmod", prover);
  std::mt19937_64 rng(3);
  std::vector<VmValue> args = {random_tensor({6, 8}, rng), random_tensor({8, 5}, rng)};
  ASSERT_GT(spread(args[0]), 0.5);
  ASSERT_GT(spread(args[1]), 0.5);
  VmValue want = Vm(m).run("main", args);
  DeviceVm device(m, Backend::cuda_emulation);
  VmValue got = device.run_host("main", args);
  EXPECT_LE(scaled_error(got, want), 1e-5);
  EXPECT_EQ(device.stats().host_fallbacks, 1);
  EXPECT_EQ(device.stats().host_fallback_ops.at("dims_tensor"), 1);
  EXPECT_EQ(device.stats().kernel_launches, 4);  // exp, rope, cpu.gemm's matmul, softmax_safe
}

// A gather or embedding index out of range is an error at the operator on the device path too
// (the kernel sets a flag the executor reads back), and the executor stays usable after it.
TEST(DeviceVm, AnIndexOutOfRangeIsAnErrorAtItsOperator) {
  SymProver prover;
  Module m = parse_module(R"(module bad_ids
fn main(table: f32[7, 4], ids: f32[2, 3]) -> f32[2, 3, 4] {
  dataflow {
    a = embedding(table, ids)
  }
  return a
}
fn gathered(x: f32[3, 5], ids: f32[2]) -> f32[3, 2] {
  dataflow {
    a = gather(x, ids, axis=1)
  }
  return a
}
fn elements(x: f32[3, 5], ids: f32[3, 2]) -> f32[3, 2] {
  dataflow {
    a = gather_elements(x, ids, axis=1)
  }
  return a
}
fn tuples(x: f32[3, 5], ids: f32[2, 2]) -> f32[2] {
  dataflow {
    a = gather_nd(x, ids)
  }
  return a
}
)",
                          "bad_ids.wmod", prover);
  DeviceVm device(m, Backend::cuda_emulation);
  std::mt19937_64 rng(4);
  VmValue table = random_tensor({7, 4}, rng), x = random_tensor({3, 5}, rng);
  auto ids = [](std::vector<double> v, Shape s) {
    return VmValue{std::make_shared<Tensor<double>>(std::move(s), std::move(v))};
  };
  auto error_of = [&](const std::string& fn, const std::vector<VmValue>& args) -> std::string {
    try {
      device.run_host(fn, args);
    } catch (const UserError& e) {
      return e.what();
    }
    return "no error";
  };
  std::string e = error_of("main", {table, ids({0, 1, 6, 2, 7, 3}, {2, 3})});
  EXPECT_NE(e.find("bad_ids.wmod:4:"), std::string::npos) << e;
  EXPECT_NE(e.find("embedding index not an integer in [0, 7): element 4"), std::string::npos) << e;
  // Negative ids count from the end for gather only.
  e = error_of("main", {table, ids({0, 1, -1, 2, 3, 3}, {2, 3})});
  EXPECT_NE(e.find("element 2"), std::string::npos) << e;
  e = error_of("gathered", {x, ids({-5, 1.5}, {2})});
  EXPECT_NE(e.find("bad_ids.wmod:10:"), std::string::npos) << e;
  EXPECT_NE(e.find("gather index out of range for dim 1 of extent 5"), std::string::npos) << e;
  EXPECT_NE(e.find("element 1"), std::string::npos) << e;
  // Good indices after an error: the flag was cleared.
  VmValue want = Vm(m).run("gathered", {x, ids({-5, 4}, {2})});
  EXPECT_LE(scaled_error(device.run_host("gathered", {x, ids({-5, 4}, {2})}), want), 1e-6);
  // The ONNX element gathers: negative indices count from the end, the element is the index's.
  e = error_of("elements", {x, ids({0, -5, 4, 2, 1, 5}, {3, 2})});
  EXPECT_NE(e.find("bad_ids.wmod:16:"), std::string::npos) << e;
  EXPECT_NE(e.find("gather_elements index out of range for dim 1 of extent 5"), std::string::npos)
      << e;
  EXPECT_NE(e.find("element 5"), std::string::npos) << e;
  e = error_of("tuples", {x, ids({2, 4, -4, 0}, {2, 2})});
  EXPECT_NE(e.find("gather_nd index out of range for dims 0..1"), std::string::npos) << e;
  EXPECT_NE(e.find("element 2"), std::string::npos) << e;
  for (const char* fn : {"elements", "tuples"}) {
    std::vector<VmValue> args = {x, std::string(fn) == "elements"
                                        ? ids({0, -5, 4, 2, 1, -1}, {3, 2})
                                        : ids({2, 4, -3, 0}, {2, 2})};
    EXPECT_LE(scaled_error(device.run_host(fn, args), Vm(m).run(fn, args)), 1e-6) << fn;
  }
}

// ONNX's tensor and CNN operator suites (tests/model/onnx_{tensor,cnn}.wmod) at two bindings:
// every operator on a device kernel, results as the host VM's.
TEST(DeviceVm, TheOnnxOperatorSuitesRunOnDeviceKernelsLikeTheHostVm) {
  for (const char* file : {"onnx_tensor", "onnx_cnn"}) {
    SymProver prover;
    Module m =
        parse_module(test::read_text(test::source_path(fmt::format("tests/model/{}.wmod", file))),
                     fmt::format("{}.wmod", file), prover);
    Vm host(m);
    DeviceVm device(m, Backend::cuda_emulation);
    std::mt19937_64 rng(21);
    for (const SymBinding& at : {SymBinding{{"n", 2}, {"m", 6}, {"h", 7}, {"w", 9}},
                                 SymBinding{{"n", 3}, {"m", 11}, {"h", 12}, {"w", 5}}}) {
      const Function& fn = *m.find_function("main");
      std::vector<VmValue> args;
      for (const Param& p : fn.params) {
        Shape s;
        for (const SymExpr& d : *p.type.dims) s.push_back(*try_evaluate(d, at).value);
        // Gather indices within [-extent, extent) of their axis (x's dim 1 for i1, 5 for i2).
        int64_t extent = p.name == "i1" ? at.at("m") : 5;
        bool ids = p.name == "i1" || p.name == "i2";
        args.push_back(ids ? random_tensor(s, rng, 0, 0, static_cast<int>(2 * extent))
                           : random_tensor(s, rng, p.name == "b" ? 0.5 : -2, 2));
        if (ids) {
          Tensor<double> t = *args.back().tensor();
          for (double& v : t.data) v -= static_cast<double>(extent);
          args.back() = VmValue{std::make_shared<Tensor<double>>(std::move(t))};
        }
        ASSERT_GT(spread(args.back()), 0.5) << file << " " << p.name;
      }
      VmValue want = host.run("main", args), got = device.run_host("main", args);
      const VmTuple &w = *want.tuple(), &g = *got.tuple();
      ASSERT_EQ(w.size(), g.size());
      for (size_t i = 0; i < w.size(); ++i)
        EXPECT_LE(scaled_error(g[i], w[i]), 1e-5)
            << file << " result " << i << " at " << binding_str(at);
    }
    EXPECT_EQ(device.stats().host_fallbacks, 0) << file;
  }
}

TEST(DeviceVm, TheKernelLibraryCompilesWithNvccForSm80AndSm90a) {
  try {
    find_nvcc();
  } catch (const UserError& e) {
    GTEST_SKIP() << e.message();
  }
  for (const char* arch : {"sm_80", "sm_90a"}) {
    CacheResult r = build_cuda_library(model_kernels_source(), arch);
    EXPECT_FALSE(r.failed) << arch << ":\n" << r.log;
  }
}

// The emulated graph capture behaves as CUDA stream capture: work issued while capturing (model
// kernels, copies, enqueued host code) is recorded, not run, and runs at each replay, a launch from
// its own copy of the argument struct; a buffer allocated during a capture and freed while its
// graph lives, or during the capture, is an internal error (reported by the next capture call or
// replay: a GPU would silently run on freed memory).
TEST(DeviceVm, AnEmulatedCaptureRunsItsWorkAtReplaysAndCatchesBuffersFreedTooEarly) {
  std::unique_ptr<Device> device = open_device(Backend::cuda_emulation, {}, true);
  ASSERT_TRUE(device->captures_graphs());
  constexpr int64_t n = 16, bytes = n * sizeof(float);
  auto read = [&](const DeviceBuffer& b) {
    std::vector<float> v(n);
    device->download(v.data(), b.data, bytes);
    return v;
  };
  DeviceBuffer src(*device, bytes);
  const std::vector<float> ones(n, 1.0f);
  device->upload(src.data, ones.data(), bytes);
  device->begin_capture();
  auto filled = std::make_shared<DeviceBuffer>(*device, bytes);
  auto copied = std::make_shared<DeviceBuffer>(*device, bytes);
  {
    weft_dk_generate_args a{};
    a.out = filled->data;
    a.numel = n;
    a.value = 2.5f;
    device->launch("weft_dk_generate_launch", &a, sizeof a);
    a.value = -1.0f;  // the recorded launch keeps its own copy
  }
  device->copy(copied->data, src.data, bytes);
  int host_calls = 0;
  device->enqueue([&](void*) { ++host_calls; });
  EXPECT_THROW(device->download(nullptr, src.data, 0), InternalError);  // a wait while capturing
  std::unique_ptr<CapturedGraph> graph = device->end_capture();
  EXPECT_EQ(host_calls, 0);
  EXPECT_TRUE(std::isnan(read(*filled)[0]));  // nothing ran at capture
  EXPECT_TRUE(std::isnan(read(*copied)[0]));
  device->replay(*graph);
  device->replay(*graph);
  EXPECT_EQ(host_calls, 2);
  EXPECT_EQ(read(*filled), std::vector<float>(n, 2.5f));
  EXPECT_EQ(read(*copied), ones);
  // Freed while the graph lives: the next replay refuses, once.
  copied.reset();
  EXPECT_THROW(device->replay(*graph), InternalError);
  graph.reset();
  filled.reset();  // the graph is gone: a plain free
  // Freed during its capture, as the run's temporaries were when their registers were dropped.
  device->begin_capture();
  { DeviceBuffer temporary(*device, bytes); }
  EXPECT_THROW(device->end_capture(), InternalError);
  // An abandoned capture has no replays: freeing what it allocated is fine.
  device->begin_capture();
  { DeviceBuffer temporary(*device, bytes); }
  device->abort_capture();
  device->begin_capture();
  EXPECT_NO_THROW(device->end_capture());
}

// Runs whose temporaries (dropped by the VM's free instructions and at the function's end),
// µGraph outputs and results are allocated while a binding's run is captured; on_host's
// dims_tensor of nine values runs on the host, so its runs cannot be captured.
constexpr const char* kCaptured = R"(module captured
sym n <= 16

ugraph scale_rows {
  program scale_rows
  input X: f32[4, 8]
  input W: f32[4, 8]
  Y = mul(X, W)
  output Y
}

fn main(x: f32[4, 8], w: f32[4, 8], v: f32[n, 8]) -> tuple(f32[4, 8], f32[n, 8]) {
  dataflow {
    y = call_ugraph(scale_rows, x, w)
    a = exp(y)
    b = tanh(a)
    e = exp(v)
    s = softmax_safe(e, dim=1)
    m = mul(s, v)
    r = tuple(b, m)
  }
  return r
}

fn on_host(x: f32[n, 8], w: f32[8, 5]) -> tuple(f32[n, 5], i64[9]) {
  dataflow {
    a = exp(x)
    g = call_lib(cpu.gemm, a, w)
    s = softmax_safe(g, dim=1)
    d = dims_tensor(values=[1, 2, 3, 4, 5, 6, 7, 8, 9])
    t = tuple(s, d)
  }
  return t
}
)";

// kCaptured's main at two bindings in turn, every result against the host VM's: the first run at
// a binding is captured, the later ones replay its graph (one that used a freed temporary would
// read or write buffers since given to the other binding's graph). Then DeviceVm::time at a
// captured binding (replays) and on_host, which is launched each time. Returns the timing.
DeviceTiming expect_captured_runs_match_the_host_vm(const Module& m, DeviceVm& device) {
  std::mt19937_64 rng(5);
  Vm host(m);
  auto main_args = [&](int64_t n) {
    return std::vector<VmValue>{random_tensor({4, 8}, rng), random_tensor({4, 8}, rng),
                                random_tensor({n, 8}, rng)};
  };
  for (int64_t n : {3, 5, 3, 5, 3, 3}) {
    std::vector<VmValue> args = main_args(n);
    EXPECT_LE(scaled_error(device.run_host("main", args), host.run("main", args)), 1e-5)
        << "n = " << n;
  }
  EXPECT_EQ(device.stats().graph_captures, 2);
  EXPECT_EQ(device.stats().graph_replays, 4);
  std::vector<VmValue> args = main_args(5);
  std::vector<DeviceValue> dev;
  for (size_t i = 0; i < args.size(); ++i)
    dev.push_back(device.upload(args[i], m.find_function("main")->params[i].type));
  DeviceValue result;
  DeviceTiming t = device.time("main", dev, 1, 3, &result);
  EXPECT_TRUE(t.graph_replays);
  EXPECT_EQ(t.timing.reps, 3);
  EXPECT_GT(t.timing.median_s, 0);
  EXPECT_EQ(device.stats().graph_replays, 4 + 1 + 1 + 3);  // the run, the warm-up, the reps
  EXPECT_LE(scaled_error(device.download(result), host.run("main", args)), 1e-5);
  for (int i = 0; i < 3; ++i) {
    std::vector<VmValue> h = {random_tensor({3, 8}, rng), random_tensor({8, 5}, rng)};
    EXPECT_LE(scaled_error(device.run_host("on_host", h), host.run("on_host", h)), 1e-5);
  }
  EXPECT_EQ(device.stats().host_fallbacks, 3);
  EXPECT_EQ(device.stats().graph_captures, 2);
  EXPECT_EQ(device.stats().graph_replays, 9);
  return t;
}

TEST(DeviceVm, EmulatedGraphsKeepEveryBufferTheirCaptureAllocated) {
  SymProver prover;
  Module m = parse_module(kCaptured, "captured.wmod", prover);
  DeviceVmOptions options;
  options.emulated_graphs = true;
  DeviceVm device(m, Backend::cuda_emulation, options);
  DeviceTiming t = expect_captured_runs_match_the_host_vm(m, device);
  EXPECT_FALSE(t.device_clock);
  EXPECT_GT(device.stats().ugraph_launches, 0);
}

// Without a GPU the cuda device is refused with the reason; with one, a run at a binding is
// captured once as a CUDA graph and replayed by the next runs at that binding, correct at two
// bindings in turn.
TEST(DeviceVm, OnAGpuARunPerBindingIsCapturedOnceAndReplayed) {
  SymProver prover;
  Module m = parse_module(kCaptured, "captured.wmod", prover);
  if (std::string why = cuda_unavailable_reason(); !why.empty()) {
    EXPECT_THROW(DeviceVm(m, Backend::cuda), UserError);
    GTEST_SKIP() << why;
  }
  DeviceVm device(m, Backend::cuda);
  // Timing a captured binding replays its graph between CUDA events.
  EXPECT_TRUE(expect_captured_runs_match_the_host_vm(m, device).device_clock);
}

TEST(DeviceVm, TheCpuBackendHasNoDevice) {
  SymProver prover;
  Module m = parse_module(
      "module m\nfn main(x: f32[2]) -> f32[2] {\n  dataflow {\n    a = exp(x)\n  }\n  return "
      "a\n}\n",
      "m.wmod", prover);
  EXPECT_THROW(DeviceVm(m, Backend::cpu), UserError);
}

// Random ONNX inputs of `fn` at a binding: token ids below `vocab`, masks of 0/1 with padding.
NpzArrays transformer_inputs(const std::vector<std::string>& names, int64_t batch, int64_t seq,
                             uint64_t seed) {
  std::mt19937_64 rng(seed);
  NpzArrays in;
  for (const std::string& n : names) {
    Tensor<double> t({batch, seq}, 1.0);
    if (n == "input_ids") {
      for (double& x : t.data) x = static_cast<double>(rng() % 200);
    } else {
      t.data.back() = t.data[t.data.size() - 2] = 0.0;  // padding at the end of the last row
    }
    in[n] = NpyArray{t, false};
  }
  return in;
}

TEST(DeviceVm, CompiledTransformersRunDeviceResidentLikeTheCpuPathAtTwoShapes) {
  if (!onnx_supported()) GTEST_SKIP() << "built without ONNX support";
  fs::path work = fs::temp_directory_path() / fmt::format("weft_device_vm_{}", getpid());
  fs::remove_all(work);
  for (const char* name : {"bert_tiny", "llama_tiny"}) {
    SymProver prover;
    OnnxImportOptions bounds;
    bounds.bounds["seq"] = 64;
    ModelFile model = load_model_file(test::source_path(fmt::format("examples/onnx/{}.onnx", name)),
                                      prover, bounds);
    ModelDirOptions options;
    options.target = "h100";
    options.bindings = {{{"batch", 1}, {"seq", 7}}, {{"batch", 2}, {"seq", 9}}};
    options.time_budget_s = 2;
    options.state_budget = 100;
    options.no_build = true;
    options.cache_dir = (work / "cache").string();
    fs::path out = work / name;
    compile_model_to_dir(model, prover, out.string(), options);
    CompiledModelDir dir(out.string());
    for (const SymBinding& at : options.bindings) {
      NpzArrays in = transformer_inputs(dir.input_names("main"), at.at("batch"), at.at("seq"), 7);
      auto want = dir.run("main", in, "inputs", UGraphExecutor::cpu);
      auto got = dir.run("main", in, "inputs", UGraphExecutor::cuda_emulation);
      ASSERT_EQ(got.size(), want.size());
      for (const auto& [k, w] : want) {
        VmValue a{std::make_shared<Tensor<double>>(got.at(k))};
        VmValue b{std::make_shared<Tensor<double>>(w)};
        ASSERT_GT(spread(b), 0.1) << name << " " << k << ": the reference must not be trivial";
        EXPECT_LE(scaled_error(a, b), 1e-4) << name << " " << k << " at " << binding_str(at);
      }
    }
    const DeviceVmStats* s = dir.device_stats();
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->host_fallbacks, 0) << name;
    EXPECT_GT(s->ugraph_launches, 0) << name;
    EXPECT_GT(s->kernel_launches, 0) << name;
  }
  fs::remove_all(work);
}

}  // namespace
}  // namespace weft
