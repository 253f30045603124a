// The CUDA runtime: dtype conversions, the nvcc build and cache (CudaRuntime.*, need the toolkit,
// not a GPU), and the GPU backend against the reference interpreter (GpuBackend.*, need a GPU).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "core/dtype_convert.h"
#include "core/error.h"
#include "interp/compare.h"
#include "interp/interpreter.h"
#include "interp/random_inputs.h"
#include "ir/parser.h"
#include "runtime/cuda_runtime.h"
#include "runtime/host_tensors.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit", "loads_generated");
WEFT_TEST_TIERS_OF("GpuBackend.*", "gpu");

#ifdef WEFT_HAVE_CUDA
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace weft {
namespace {

namespace fs = std::filesystem;

// ---- helpers ----

Graph load(const std::string& path) {
  return test::load_graph_file(path);
}

std::vector<std::string> weft_files(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".weft") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

using Cli = std::pair<int, std::string>;
Cli run_cli(const std::string& args) {
  return test::run_weft(args);
}

// A cache directory of this process only, removed with it: builds in it are never cache hits
// from another test.
struct PrivateCache {
  fs::path dir =
      fs::temp_directory_path() / ("weft-cuda-test-" + std::to_string(getpid()) + "-" +
                                   testing::UnitTest::GetInstance()->current_test_info()->name());
  PrivateCache() { fs::remove_all(dir); }
  ~PrivateCache() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

#define SKIP_WITHOUT_NVCC()                                                               \
  do {                                                                                    \
    if (!cuda_runtime_built()) GTEST_SKIP() << "weft was built without the CUDA toolkit"; \
    try {                                                                                 \
      find_nvcc();                                                                        \
    } catch (const UserError& e) {                                                        \
      GTEST_SKIP() << e.message();                                                        \
    }                                                                                     \
  } while (0)

#define SKIP_WITHOUT_DEVICE()                                                           \
  do {                                                                                  \
    if (std::string why = cuda_unavailable_reason(); !why.empty()) GTEST_SKIP() << why; \
  } while (0)

// A program the runtime can run without the CUDA code generator: O = 2 X + 1 on f16[4, 64], by a
// hand-written kernel with the weft_cuda_launch ABI.
ProgramPlan scale_add_plan(const std::string& target = "h100") {
  ProgramPlan p;
  p.name = "scale_add";
  p.target = target;
  PlanBuffer x;
  x.name = "X";
  x.space = MemSpace::device;
  x.role = TensorRole::input;
  x.dtype = DType::f16;
  x.shape = {4, 64};
  PlanBuffer o = x;
  o.name = "O";
  o.role = TensorRole::output;
  p.tensors = {x, o};
  p.inputs = {"X"};
  p.outputs = {"O"};
  return p;
}

std::string scale_add_source(float scale = 2.0f) {
  return fmt::format(R"(// Hand-written test kernel with the weft CUDA ABI.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

__global__ void scale_add(const __half* x, __half* o, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) o[i] = __float2half({:.1f}f * __half2float(x[i]) + 1.0f);
}}

extern "C" int weft_cuda_launch(void* const* inputs, void* const* outputs, void* workspace,
                                void* stream) {{
  (void)workspace;
  scale_add<<<2, 128, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const __half*>(inputs[0]), static_cast<__half*>(outputs[0]), 256);
  return static_cast<int>(cudaGetLastError());
}}

extern "C" const char* weft_cuda_plan_name(void) {{ return "scale_add"; }}
)",
                     scale);
}

std::vector<float> ramp_inputs(size_t n) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i)
    x[i] = -1.0f + 2.0f * static_cast<float>(i) / static_cast<float>(n);
  return x;
}

// ---- dtype conversions (no toolkit needed) ----

TEST(CudaRuntime, ConvertsKnownValuesToF16AndBf16) {
  EXPECT_EQ(float_to_f16_bits(1.0f), 0x3C00);
  EXPECT_EQ(float_to_f16_bits(-2.0f), 0xC000);
  EXPECT_EQ(float_to_f16_bits(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_f16_bits(65519.0f), 0x7BFF);
  EXPECT_EQ(float_to_f16_bits(65520.0f), 0x7C00);  // the midpoint rounds to even: infinity
  EXPECT_EQ(float_to_f16_bits(0x1p-24f), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_f16_bits(0x1p-25f), 0x0000);  // half of it: ties to even (zero)
  EXPECT_EQ(float_to_f16_bits(0x1.8p-25f), 0x0001);
  EXPECT_EQ(float_to_f16_bits(1.0f + 0x1p-11f), 0x3C00);      // tie: down to even
  EXPECT_EQ(float_to_f16_bits(1.0f + 3 * 0x1p-11f), 0x3C02);  // tie: up to even
  EXPECT_EQ(float_to_f16_bits(0x1.ffcp-15f), 0x0400);         // rounds up into the normals
  EXPECT_TRUE(std::isnan(f16_bits_to_float(float_to_f16_bits(NAN))));
  EXPECT_EQ(f16_bits_to_float(0x0001), 0x1p-24f);
  EXPECT_EQ(f16_bits_to_float(0xFBFF), -65504.0f);
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16_bits(1.0f + 0x1p-8f), 0x3F80);      // tie: down to even
  EXPECT_EQ(float_to_bf16_bits(1.0f + 3 * 0x1p-8f), 0x3F82);  // tie: up to even
  EXPECT_TRUE(std::isnan(bf16_bits_to_float(float_to_bf16_bits(NAN))));
  EXPECT_EQ(round_to_dtype(0.1f, DType::f32), 0.1f);
  std::vector<float> x = {0.5f, -0.25f, 3.0f};
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    std::vector<uint8_t> bytes = encode_as(x.data(), x.size(), t);
    EXPECT_EQ(bytes.size(), x.size() * static_cast<size_t>(dtype_bytes(t)));
    std::vector<float> back(x.size());
    decode_from(bytes.data(), x.size(), t, back.data());
    EXPECT_EQ(back, x) << dtype_name(t);
  }
}

TEST(CudaRuntime, ConversionsAgreeWithCudaHeaders) {
#ifndef WEFT_HAVE_CUDA
  GTEST_SKIP() << "weft was built without the CUDA toolkit";
#else
  // Every f16 and bf16 value, the midpoints between neighbours, and random floats of all
  // magnitudes, against the toolkit's own round-to-nearest-even conversions.
  std::vector<float> xs;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    xs.push_back(f16_bits_to_float(static_cast<uint16_t>(h)));
    xs.push_back(bf16_bits_to_float(static_cast<uint16_t>(h)));
    uint32_t f = std::bit_cast<uint32_t>(bf16_bits_to_float(static_cast<uint16_t>(h)));
    xs.push_back(std::bit_cast<float>(f | 0x8000u));  // bf16 midpoint
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 1000000; ++i)
    xs.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng())));
  for (uint32_t h = 0; h < 0x7C00; ++h) {  // f16 midpoints (positive, finite)
    float a = f16_bits_to_float(static_cast<uint16_t>(h)),
          b = f16_bits_to_float(static_cast<uint16_t>(h + 1));
    xs.push_back(0.5f * (a + b));
    xs.push_back(-0.5f * (a + b));
  }
  int64_t f16_mismatch = 0, bf16_mismatch = 0, checked = 0;
  for (float x : xs) {
    if (std::isnan(x)) continue;
    ++checked;
    uint16_t want16 = __half_as_ushort(__float2half_rn(x));
    uint16_t wantb = __bfloat16_as_ushort(__float2bfloat16_rn(x));
    if (float_to_f16_bits(x) != want16 && f16_mismatch++ < 5)
      ADD_FAILURE() << "f16 of " << x << ": " << float_to_f16_bits(x) << " vs " << want16;
    if (float_to_bf16_bits(x) != wantb && bf16_mismatch++ < 5)
      ADD_FAILURE() << "bf16 of " << x << ": " << float_to_bf16_bits(x) << " vs " << wantb;
    float back = f16_bits_to_float(want16);
    if (!(back == __half2float(__ushort_as_half(want16))) && f16_mismatch++ < 5)
      ADD_FAILURE() << "f16 decode of " << want16;
  }
  EXPECT_GT(checked, 1000000);
  EXPECT_EQ(f16_mismatch, 0);
  EXPECT_EQ(bf16_mismatch, 0);
#endif
}

// ---- nvcc build and cache (toolkit, no device) ----

TEST(CudaRuntime, FindsNvccAndRejectsABadPath) {
  SKIP_WITHOUT_NVCC();
  std::string nvcc = find_nvcc();
  EXPECT_EQ(access(nvcc.c_str(), X_OK), 0) << nvcc;
  BuildOptions options;
  options.cuda.nvcc = "/nonexistent/bin/nvcc";
  EXPECT_THROW(find_nvcc(options.cuda), UserError);
  setenv("WEFT_NVCC", "/nonexistent/bin/nvcc", 1);
  try {
    find_nvcc();
    ADD_FAILURE() << "a bad $WEFT_NVCC was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("WEFT_NVCC"), std::string::npos) << e.message();
  }
  unsetenv("WEFT_NVCC");
}

TEST(CudaRuntime, BuildsWithNvccAndCachesByContent) {
  SKIP_WITHOUT_NVCC();
  PrivateCache cache;
  BuildOptions options;
  options.cache_dir = cache.dir.string();
  auto first = build_cuda_program(scale_add_plan(), scale_add_source(), options);
  EXPECT_FALSE(first->from_cache());
  EXPECT_TRUE(fs::exists(first->artifact())) << first->artifact();
  EXPECT_EQ(fs::path(first->artifact()).parent_path(), cache.dir);
  EXPECT_EQ(first->plan_name(), "scale_add");  // a host function of the loaded library
  auto again = build_cuda_program(scale_add_plan(), scale_add_source(), options);
  EXPECT_TRUE(again->from_cache());
  EXPECT_EQ(again->artifact(), first->artifact());
  // The source, the flags and the arch are all part of the key.
  auto other_source = build_cuda_program(scale_add_plan(), scale_add_source(3.0f), options);
  EXPECT_FALSE(other_source->from_cache());
  EXPECT_NE(other_source->artifact(), first->artifact());
  auto other_arch = build_cuda_program(scale_add_plan("a100"), scale_add_source(), options);
  EXPECT_NE(other_arch->artifact(), first->artifact());
  // Nothing but the artifacts and their sources is left in the cache.
  int leftovers = 0;
  for (const auto& e : fs::directory_iterator(cache.dir))
    if (e.path().extension() != ".so" && e.path().extension() != ".cu") ++leftovers;
  EXPECT_EQ(leftovers, 0);
}

TEST(CudaRuntime, BadSourceGivesNvccsMessage) {
  SKIP_WITHOUT_NVCC();
  PrivateCache cache;
  BuildOptions options;
  options.cache_dir = cache.dir.string();
  try {
    build_cuda_program(scale_add_plan(), "__global__ void k() { undeclared_thing(); }\n", options);
    ADD_FAILURE() << "nvcc accepted broken source";
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("nvcc failed"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("undeclared_thing"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("error"), std::string::npos) << e.message();
  }
  // A failed build leaves no artifact behind, so the next try compiles again.
  for (const auto& e : fs::directory_iterator(cache.dir)) EXPECT_NE(e.path().extension(), ".so");
}

TEST(CudaRuntime, RejectsPlansForTheCpu) {
  SKIP_WITHOUT_NVCC();
  EXPECT_THROW(build_cuda_program(scale_add_plan("cpu"), scale_add_source()), UserError);
  Graph g = load(weft::test::source_dir() + "/examples/gated_mlp.weft");
  EXPECT_THROW(compile_program(g, target_by_name("cpu"), Backend::cuda), UserError);
}

TEST(CudaRuntime, MatchesTargetsToDevices) {
  CudaDevice d;
  d.name = "NVIDIA H100 80GB HBM3";
  d.major = 9;
  EXPECT_EQ(target_for_device(d).name, "h100");
  d.name = "NVIDIA H200";
  EXPECT_EQ(target_for_device(d).name, "h200");
  d.name = "NVIDIA A100-SXM4-80GB";
  d.major = 8;
  EXPECT_EQ(target_for_device(d).name, "a100");
  EXPECT_EQ(target_by_name("h100").arch, "sm_90a");
  EXPECT_EQ(target_by_name("h200").arch, "sm_90a");
  EXPECT_EQ(target_by_name("a100").arch, "sm_80");
}

// ---- without a device: clear errors, exit code 1 ----

TEST(CudaRuntime, NoDeviceIsAUserError) {
  if (cuda_unavailable_reason().empty()) GTEST_SKIP() << "a CUDA device is present";
  try {
    require_cuda_device();
    ADD_FAILURE() << "no exception";
  } catch (const UserError& e) {
    if (cuda_runtime_built())
      EXPECT_NE(e.message().find("cudaGetDeviceCount"), std::string::npos) << e.message();
    else
      EXPECT_NE(e.message().find("without the CUDA toolkit"), std::string::npos) << e.message();
  }
  if (!cuda_runtime_built()) return;
  SKIP_WITHOUT_NVCC();
  auto prog = build_cuda_program(scale_add_plan(), scale_add_source());
  EXPECT_THROW(prog->run({ramp_inputs(256)}), UserError);
  EXPECT_THROW(prog->time({ramp_inputs(256)}, 1, 1), UserError);
}

TEST(CudaRuntime, CliWithoutDeviceExitsOne) {
  if (cuda_unavailable_reason().empty()) GTEST_SKIP() << "a CUDA device is present";
  std::string ex = weft::test::source_dir() + "/examples/";
  for (std::string args :
       {"run " + ex + "gated_mlp.weft --backend cuda",
        "run " + ex + "gated_mlp.fused.weft --backend cuda --compare " + ex + "gated_mlp.weft",
        "bench " + ex + "gated_mlp.fused.weft --backend cuda --json"}) {
    SCOPED_TRACE(args);
    auto [rc, out] = run_cli(args);
    EXPECT_EQ(rc, 1) << out;
    EXPECT_NE(out.find("error: "), std::string::npos) << out;
    EXPECT_TRUE(out.find("CUDA") != std::string::npos) << out;
  }
}

// ---- on the GPU ----

TEST(GpuBackend, RunsAHandWrittenKernelAndTimesIt) {
  SKIP_WITHOUT_DEVICE();
  auto prog = build_cuda_program(scale_add_plan(target_for_device(require_cuda_device()).name),
                                 scale_add_source());
  std::vector<float> x = ramp_inputs(256);
  auto out = prog->run({x});
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].size(), x.size());
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(out[0][i], round_to_dtype(2.0f * round_to_dtype(x[i], DType::f16) + 1.0f, DType::f16))
        << "element " << i;
  Timing t = prog->time({x}, 3, 11);
  EXPECT_EQ(t.reps, 11);
  EXPECT_GT(t.min_s, 0);
  EXPECT_LE(t.min_s, t.median_s);
  EXPECT_LE(t.median_s, t.max_s);
  EXPECT_LT(t.median_s, 0.1);  // a 256-element kernel
  EXPECT_THROW(prog->run({std::vector<float>(3)}), UserError);
}

TEST(GpuBackend, RejectsSharedMemoryAboveTheDeviceLimit) {
  SKIP_WITHOUT_DEVICE();
  const CudaDevice& dev = require_cuda_device();
  ASSERT_GT(dev.max_smem_per_block, 0);
  ProgramPlan plan = scale_add_plan(target_for_device(dev).name);
  KernelPlan k;
  k.name = "k0";
  k.smem_bytes = dev.max_smem_per_block + 1;
  plan.kernels.push_back(k);
  auto prog = build_cuda_program(plan, scale_add_source());
  try {
    prog->run({ramp_inputs(256)});
    ADD_FAILURE() << "the launch was not refused";
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("shared memory"), std::string::npos) << e.message();
  }
}

// Runs `g` on the GPU and with the interpreter (f64) on the same seeded inputs in [-1, 1),
// rounded to their dtypes as the GPU stores them; each output must be within its dtype's
// tolerance.
void expect_gpu_matches_interpreter(const Graph& g, uint64_t seed = 11) {
  const CudaDevice& dev = require_cuda_device();
  auto inputs = random_inputs(g, seed);
  round_to_input_dtypes(g, inputs);
  for (const auto& t : inputs) {
    auto [lo, hi] = std::minmax_element(t.data.begin(), t.data.end());
    ASSERT_LT(*lo, *hi) << "constant input";
  }
  std::vector<std::vector<float>> in = host_buffers_of(inputs);
  auto prog = compile_program(g, target_for_device(dev), Backend::cuda);
  auto got = prog->run(in);
  auto want = evaluate_real(g, inputs, /*f32=*/false);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    Tensor<double> gt(want[i].shape, std::vector<double>(got[i].begin(), got[i].end()));
    DType dtype = g.type(g.outputs[i]).dtype;
    Comparison c = compare_outputs(gt, want[i], tolerance_for(dtype));
    EXPECT_GT(c.max_ref, 0) << "trivial reference output " << i;
    EXPECT_TRUE(c.ok) << g.name << " output " << i << " (" << dtype_name(dtype)
                      << "): scaled error " << c.scaled_error << " > " << c.tolerance
                      << ", max abs error " << c.max_abs_error << ", max |ref| " << c.max_ref;
  }
}

TEST(GpuBackend, MatchesInterpreterOnEveryExample) {
  SKIP_WITHOUT_DEVICE();
  int n = 0;
  for (const std::string& f : weft_files(weft::test::source_dir() + "/examples")) {
    SCOPED_TRACE(f);
    expect_gpu_matches_interpreter(load(f));
    ++n;
  }
  EXPECT_GE(n, 6);
}

TEST(GpuBackend, MatchesInterpreterOnTestPrograms) {
  SKIP_WITHOUT_DEVICE();
  int n = 0;
  for (const std::string& f : weft_files(weft::test::source_dir() + "/tests/golden/lower")) {
    SCOPED_TRACE(f);
    expect_gpu_matches_interpreter(load(f));
    ++n;
  }
  EXPECT_GE(n, 7);
}

TEST(GpuBackend, TimesAnExampleWithEvents) {
  SKIP_WITHOUT_DEVICE();
  Graph g = load(weft::test::source_dir() + "/examples/gated_mlp.fused.weft");
  auto prog = compile_program(g, target_for_device(require_cuda_device()), Backend::cuda);
  std::vector<std::vector<float>> in;
  for (const auto& t : random_inputs(g, 1)) in.emplace_back(t.data.begin(), t.data.end());
  Timing t = prog->time(in, 3, 21);
  EXPECT_EQ(t.reps, 21);
  EXPECT_GT(t.min_s, 0);
  EXPECT_LE(t.median_s, t.max_s);
}

}  // namespace
}  // namespace weft
