// The CUDA code generator without a GPU: generated units run in host emulation against the
// reference interpreter (CudaEmulation), and compile with nvcc for sm_80 and sm_90a when the
// toolkit is installed (CudaCompile).
#include <dlfcn.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/cuda/emit_cuda.h"
#include "codegen/cuda/emulate.h"
#include "core/target.h"
#include "interp/compare.h"
#include "interp/interpreter.h"
#include "interp/random_inputs.h"
#include "ir/parser.h"
#include "lower/lifetimes.h"
#include "lower/pipeline.h"
#include "runtime/dtype_convert.h"
#include "tests/test_util.h"

namespace weft {
namespace {

Graph load(const std::string& path) { return test::load_graph_file(path); }

using test::source_path;

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// Lowers `g` for `target`, runs the emulated CUDA on seeded inputs rounded to their plan dtypes
// and compares every output with the interpreter (f64, same rounded inputs) within the output
// dtype's tolerance. Returns the generated source.
std::string expect_emulation_matches(const Graph& g, const std::string& target = "h100") {
  ProgramPlan plan = lower_graph(g, target_by_name(target));
  auto inputs = random_inputs(g, 7);
  std::vector<std::vector<float>> in;
  for (size_t i = 0; i < inputs.size(); ++i) {
    DType d = plan.find_tensor(plan.inputs[i])->dtype;
    std::vector<float> v;
    for (double& x : inputs[i].data) {
      x = round_to_dtype(static_cast<float>(x), d);
      v.push_back(static_cast<float>(x));
    }
    auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    EXPECT_LT(*lo, *hi) << "constant input " << plan.inputs[i];
    in.push_back(std::move(v));
  }
  auto prog = compile_emulated(plan);
  auto got = prog->run(in);
  auto want = evaluate_real(g, inputs, /*f32=*/false);
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    DType d = plan.find_tensor(plan.outputs[i])->dtype;
    Tensor<double> gt(want[i].shape, std::vector<double>(got[i].begin(), got[i].end()));
    Comparison c = compare_outputs(gt, want[i], tolerance_for(d));
    EXPECT_GT(c.max_ref, 0) << "trivial reference output " << i;
    EXPECT_TRUE(c.ok) << g.name << " output " << plan.outputs[i] << ": scaled error "
                      << c.scaled_error << " > " << c.tolerance;
  }
  return prog->source();
}

class CudaSmallProgram : public testing::TestWithParam<const char*> {};

TEST_P(CudaSmallProgram, MatchesInterpreter) {
  expect_emulation_matches(load(source_path(GetParam())));
}

INSTANTIATE_TEST_SUITE_P(CudaEmulation, CudaSmallProgram,
                         testing::Values("tests/golden/lower/rms_norm_linear.weft",
                                         "tests/golden/lower/rms_norm_linear.fused.weft",
                                         "tests/golden/lower/gated_mlp.weft",
                                         "tests/golden/lower/gated_mlp.fused.weft",
                                         "tests/golden/lower/gqa_attention.weft",
                                         "tests/golden/lower/gqa_attention.fused.weft",
                                         "tests/golden/lower/movement.fused.weft",
                                         "tests/data/cuda/gated_mlp_wide.fused.weft",
                                         "tests/data/cuda/rms_norm_linear_bf16.fused.weft",
                                         "tests/data/cuda/attention_f32.fused.weft"));

// The fast paths are really taken by the programs above, so their results check them.
TEST(CudaEmulation, WideGatedMlpUsesTensorCoresSwizzleAndPipeline) {
  Graph g = load(source_path("tests/data/cuda/gated_mlp_wide.fused.weft"));
  ProgramPlan plan = lower_graph(g, target_by_name("h100"));
  ASSERT_EQ(plan.kernels.size(), 1u);
  EXPECT_GT(plan.kernels[0].stages, 1);
  EXPECT_TRUE(plan.kernels[0].find_buffer("w1")->swizzle);
  std::string src = emit_cuda_source(plan);
  EXPECT_EQ(count(src, "weft_mma_f16(racc"), 2);  // both matmuls accumulate in registers
  EXPECT_GE(count(src, "weft_swz<2>"), 2);
  EXPECT_GE(count(src, "weft_cp_async16("), 3);
  EXPECT_EQ(count(src, fmt::format("weft_cp_async_wait<{}>", plan.kernels[0].stages - 1)), 1);
}

// The emitter takes the register-accumulator decision from the plan (lower/fuse_accumulators.h)
// and refuses a plan that disagrees with the lowering's analysis instead of guessing.
TEST(CudaEmulation, EmitterFollowsThePlansAccumulatorFusion) {
  Graph g = load(source_path("tests/data/cuda/gated_mlp_wide.fused.weft"));
  ProgramPlan plan = lower_graph(g, target_by_name("h100"));
  KernelPlan& k = plan.kernels.at(0);
  // The register accumulators' shared buffers reuse memory of the loop's pipelined tiles (they
  // are written after the loop), so the emulation run above checks that ordering too.
  std::vector<LiveBuffer> live = shared_lifetimes(k);
  bool reused = false;
  for (const LiveBuffer& acc : live)
    for (const LiveBuffer& tile : live)
      if ((acc.name == "aa" || acc.name == "ba") && is_pipelined(k, tile.name))
        reused = reused ||
                 (acc.offset < tile.offset + tile.bytes && tile.offset < acc.offset + acc.bytes);
  EXPECT_TRUE(reused);
  ProgramPlan unmarked = plan;
  for (Step& s : unmarked.kernels[0].loop_steps) s.in_registers = false;
  EXPECT_THROW(emit_cuda_source(unmarked), InternalError);
  ProgramPlan unfused = plan;
  unfused.kernels[0].find_buffer("a")->space = MemSpace::shared;
  EXPECT_THROW(emit_cuda_source(unfused), InternalError);
}

TEST(CudaEmulation, Bf16MatmulUsesBf16TensorCoresAndOptsIntoLargeSharedMemory) {
  std::string src = emit_cuda_source(
      lower_graph(load(source_path("tests/data/cuda/rms_norm_linear_bf16.fused.weft")),
                  target_by_name("h100")));
  EXPECT_GE(count(src, "weft_mma_bf16(racc"), 1);
  EXPECT_EQ(count(src, "WEFT_SET_SMEM(k0,"), 1);
}

TEST(CudaEmulation, SourceHasTheLaunchAbi) {
  std::string src = emit_cuda_source(lower_graph(
      load(source_path("tests/golden/lower/gqa_attention.fused.weft")), target_by_name("a100")));
  EXPECT_NE(src.find("extern \"C\" int weft_cuda_launch(void* const* inputs, void* const* "
                     "outputs, void* workspace, void* stream)"),
            std::string::npos);
  EXPECT_NE(src.find("extern \"C\" const char* weft_cuda_plan_name(void)"), std::string::npos);
  EXPECT_EQ(count(src, "  WEFT_LAUNCH(k"), 6);  // 1 graph-defined + 5 library kernels
}

// A broken fragment layout or swizzle must be caught: the same program with the emulated mma's
// B operand transposed gives wrong results.
TEST(CudaEmulation, EmulationDetectsAWrongFragmentLayout) {
  Graph g = load(source_path("tests/data/cuda/gated_mlp_wide.fused.weft"));
  ProgramPlan plan = lower_graph(g, target_by_name("h100"));
  std::string src = emit_cuda_source(plan);
  std::string good = "weft_ldmatrix(r, p, 2, true)";
  ASSERT_NE(src.find(good), std::string::npos);
  src.replace(src.find(good), good.size(), "weft_ldmatrix(r, p, 2, false)");
  std::string dir = testing::TempDir() + "/weft_cuda_mutant_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/m.cu") << src;
  std::string cmd = fmt::format(
      "g++ -std=c++20 -O1 -x c++ -DWEFT_HOST_EMULATION -shared -fPIC -pthread -o '{0}/m.so' "
      "'{0}/m.cu'",
      dir);
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  // Loading and comparing goes through the same run path as the real programs.
  void* h = dlopen((dir + "/m.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr);
  using LaunchFn = int (*)(void* const*, void* const*, void*, void*);
  auto launch = reinterpret_cast<LaunchFn>(dlsym(h, "weft_cuda_launch"));
  ASSERT_NE(launch, nullptr);
  auto inputs = random_inputs(g, 7);
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<void*> ptrs;
  for (auto& t : inputs) {
    std::vector<float> v;
    for (double& x : t.data)
      v.push_back(static_cast<float>(x = round_to_dtype(float(x), DType::f16)));
    bytes.push_back(encode_as(v.data(), v.size(), DType::f16));
  }
  for (auto& b : bytes) ptrs.push_back(b.data());
  const PlanBuffer* o = plan.find_tensor("O");
  std::vector<uint8_t> out(static_cast<size_t>(o->bytes()));
  void* outs[] = {out.data()};
  ASSERT_EQ(launch(ptrs.data(), outs, nullptr, nullptr), 0);
  std::vector<float> got(static_cast<size_t>(numel(o->shape)));
  decode_from(out.data(), got.size(), DType::f16, got.data());
  auto want = evaluate_real(g, inputs, false);
  Tensor<double> gt(want[0].shape, std::vector<double>(got.begin(), got.end()));
  EXPECT_FALSE(compare_outputs(gt, want[0], tolerance_for(DType::f16)).ok);
  dlclose(h);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

// ---------------------------------------------------------------- nvcc

std::string find_nvcc() {
  if (const char* e = std::getenv("WEFT_NVCC"); e && *e) return e;
  for (const char* p : {"/usr/local/cuda/bin/nvcc", "/usr/bin/nvcc"})
    if (std::filesystem::exists(p)) return p;
  return std::system("command -v nvcc > /dev/null 2>&1") == 0 ? "nvcc" : "";
}

// Every example (full size) and CUDA test program compiles for sm_80 and sm_90a with all
// warnings as errors.
TEST(CudaCompile, EveryExampleCompilesForSm80AndSm90a) {
  std::string nvcc = find_nvcc();
  if (nvcc.empty()) GTEST_SKIP() << "nvcc not found";
  std::vector<std::string> files;
  // The examples at full size, and the bf16 / f32 test programs.
  for (const char* dir : {"examples", "tests/data/cuda"})
    for (const auto& e : std::filesystem::directory_iterator(source_path(dir)))
      if (e.path().extension() == ".weft") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 9u);
  std::string dir = testing::TempDir() + "/weft_nvcc_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    Graph g = load(f);
    std::string cu = dir + "/" + std::filesystem::path(f).stem().string() + ".cu";
    std::ofstream(cu) << emit_cuda_source(lower_graph(g, target_by_name("h100")));
    std::string log = cu + ".log";
    std::string cmd = fmt::format(
        "'{}' -std=c++17 -c -o /dev/null -gencode arch=compute_80,code=sm_80 "
        "-gencode arch=compute_90a,code=sm_90a -Werror all-warnings "
        "-Xcompiler -Wall,-Wextra,-Werror '{}' > '{}' 2>&1",
        nvcc, cu, log);
    int rc = std::system(cmd.c_str());
    EXPECT_EQ(rc, 0) << cmd << "\n" << test::read_text(log).substr(0, 4000);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace weft
