// The CUDA code generator without a GPU: generated units run in host emulation against the
// reference interpreter (CudaEmulation), and compile with nvcc for sm_80 and sm_90a when the
// toolkit is installed (CudaCompile).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/cuda/emit_cuda.h"
#include "core/target.h"
#include "interp/compare.h"
#include "ir/parser.h"
#include "lower/lifetimes.h"
#include "lower/pipeline.h"
#include "runtime/program.h"
#include "tests/emulation_check.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit", "loads_generated");
// Minutes under ASan at -O0 (runs in the optimized build: make test-heavy).
WEFT_TEST_TIERS_OF("CudaCompile.EveryExampleCompilesForSm80AndSm90a", "heavy");

namespace weft {
namespace {

Graph load(const std::string& path) {
  return test::load_graph_file(path);
}

using test::source_path;

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// Lowers `g` for `target`, runs the emulated CUDA and expects every output to match the
// interpreter. Returns the generated source.
std::string expect_emulation_matches(const Graph& g, const std::string& target = "h100") {
  ProgramPlan plan = lower_graph(g, target_by_name(target));
  auto prog = load_program(plan, Backend::cuda_emulation);
  auto cmp = test::compare_emulation(g, plan, *prog, 7);
  for (size_t i = 0; i < cmp.size(); ++i)
    EXPECT_TRUE(cmp[i].ok) << g.name << " output " << plan.outputs[i] << ": scaled error "
                           << cmp[i].scaled_error << " > " << cmp[i].tolerance;
  return prog->source();
}

// True when an edited unit of `plan` still computes `g` in emulation (every output within
// tolerance): mutants must not.
bool edited_unit_matches(const Graph& g, const ProgramPlan& plan, const std::string& source) {
  auto cmp =
      test::compare_emulation(g, plan, *build_program(plan, Backend::cuda_emulation, source), 7);
  return !cmp.empty() &&
         std::all_of(cmp.begin(), cmp.end(), [](const Comparison& c) { return c.ok; });
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
                                         "tests/data/cuda/gated_mlp_wider.fused.weft",
                                         "tests/data/cuda/rms_norm_linear_bf16.fused.weft",
                                         "tests/data/cuda/attention_f32.fused.weft",
                                         "tests/data/cuda/attention_hoisted_q.fused.weft"));

// The fast paths are really taken by the programs above, so their results check them.
TEST(CudaEmulation, WideGatedMlpUsesTensorCoresSwizzleAndPipeline) {
  Graph g = load(source_path("tests/data/cuda/gated_mlp_wide.fused.weft"));
  ProgramPlan plan = lower_graph(g, target_by_name("h100"));
  ASSERT_EQ(plan.kernels.size(), 1u);
  EXPECT_GT(plan.kernels[0].stages, 1);
  EXPECT_TRUE(plan.kernels[0].find_buffer("w1")->swizzle);
  std::string src = emit_cuda_source(plan);
  EXPECT_EQ(count(src, "weft_mma_f16(racc"), 2);  // both matmuls accumulate in registers
  EXPECT_GE(count(src, "weft_swz<2, "), 2);
  EXPECT_GE(count(src, "weft_cp_async16("), 3);
  EXPECT_EQ(count(src, fmt::format("weft_cp_async_wait<{}>", plan.kernels[0].stages - 1)), 1);
}

// Rows wider than 128 bytes are swizzled by row index: weft_swz is told each buffer's row bytes
// (the wider gated MLP's 256-byte input and 512-byte weight rows, checked above).
TEST(CudaEmulation, WiderGatedMlpSwizzlesRowsOf256And512Bytes) {
  Graph g = load(source_path("tests/data/cuda/gated_mlp_wider.fused.weft"));
  ProgramPlan plan = lower_graph(g, target_by_name("h100"));
  ASSERT_EQ(plan.kernels.size(), 1u);
  EXPECT_EQ(plan.kernels[0].find_buffer("w1")->row_bytes(), 512);
  EXPECT_TRUE(plan.kernels[0].find_buffer("w1")->swizzle);
  EXPECT_TRUE(plan.kernels[0].find_buffer("x")->swizzle);
  std::string src = emit_cuda_source(plan);
  EXPECT_EQ(count(src, "weft_mma_f16(racc"), 2);
  EXPECT_GE(count(src, "weft_swz<2, 256>"), 1);
  EXPECT_GE(count(src, "weft_swz<2, 512>"), 2);
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
  ASSERT_TRUE(edited_unit_matches(g, plan, src));
  src.replace(src.find(good), good.size(), "weft_ldmatrix(r, p, 2, false)");
  EXPECT_FALSE(edited_unit_matches(g, plan, src));
}

// A loop-invariant tile (the query) is loaded once, before the loop and before the prologue of
// the K/V pipeline, in its own cp.async group; the loop waits for the same group counts as
// without it. The emulated cp.async lands only at the wait that retires its group, so the
// bookkeeping is checked: waiting for one group fewer, or committing the query's group after
// the prologue's (then iteration 0's wait leaves it in flight), gives wrong results.
TEST(CudaEmulation, HoistedLoadIsIssuedOnceAheadOfThePipeline) {
  Graph g = load(source_path("tests/data/cuda/attention_hoisted_q.fused.weft"));
  ProgramPlan plan = lower_graph(g, target_by_name("h100"));
  const KernelPlan& k = plan.kernels.at(0);
  ASSERT_EQ(k.stages, 4);
  for (const Step& s : k.loop_steps) {
    if (s.kind == StepKind::load) {
      EXPECT_EQ(s.hoisted, s.outputs[0] == "q") << s.outputs[0];
    }
  }
  EXPECT_FALSE(is_pipelined(k, "q"));
  EXPECT_TRUE(is_pipelined(k, "k") && is_pipelined(k, "v"));
  std::string src = emit_cuda_source(plan);
  EXPECT_EQ(count(src, "// load q <- Q"), 1);
  EXPECT_EQ(count(src, "// load k <- K"), 2);  // the prologue and the loop's issue
  const std::string hoisted = "// loop-invariant tiles, loaded once";
  size_t q = src.find(hoisted), prologue = src.find("for (int f = 0;"),
         loop = src.find("for (int it = 0;");
  ASSERT_NE(q, std::string::npos);
  ASSERT_NE(prologue, std::string::npos);
  EXPECT_LT(q, prologue);
  EXPECT_LT(prologue, loop);
  EXPECT_EQ(count(src, "weft_cp_async_wait<3>()"), 1);
  EXPECT_EQ(count(src, "weft_cp_async_wait<0>()"), 0);  // no extra wait for the query
  ASSERT_TRUE(edited_unit_matches(g, plan, src));

  std::string fewer = src;
  fewer.replace(fewer.find("weft_cp_async_wait<3>()"), 23, "weft_cp_async_wait<4>()");
  EXPECT_FALSE(edited_unit_matches(g, plan, fewer));

  // Move the query's load and commit from before the prologue to just before the loop.
  std::string late = src;
  size_t line_start = late.rfind('\n', q) + 1;
  const std::string commit = "weft_cp_async_commit();\n";
  size_t end = late.find(commit, q) + commit.size();
  std::string block = late.substr(line_start, end - line_start);
  late.erase(line_start, end - line_start);
  size_t at = late.rfind('\n', late.find("for (int it = 0;")) + 1;
  late.insert(at, block);
  ASSERT_EQ(count(late, "// load q <- Q"), 1);
  EXPECT_FALSE(edited_unit_matches(g, plan, late));
}

// A kernel whose only load is hoisted has no wait in its loop: the emitter waits for the tile
// before the loop, and without that wait the tile never lands.
TEST(CudaEmulation, OnlyHoistedLoadsWaitBeforeTheLoop) {
  Graph g = parse_graph(R"(program invariant_only
input X: f16[4, 16]
O = kernel(X, grid=[4], block=64, loop=4) {
  x = iter(X, imap=[0])
  e = exp(x)
  a = accum_sum(e)
after:
  O = save(a, omap=[0])
}
output O
)",
                        "invariant_only.weft");
  ProgramPlan plan = lower_graph(g, target_by_name("h100"));
  const KernelPlan& k = plan.kernels.at(0);
  EXPECT_EQ(k.stages, 1);
  ASSERT_EQ(k.loop_steps.at(0).kind, StepKind::load);
  EXPECT_TRUE(k.loop_steps.at(0).hoisted);
  std::string src = expect_emulation_matches(g);
  const std::string wait = "weft_cp_async_wait<0>();\n";
  ASSERT_EQ(count(src, wait), 1);
  EXPECT_LT(src.find(wait), src.find("for (int it = 0;"));
  std::string unwaited = src;
  unwaited.erase(unwaited.find(wait), wait.size());
  EXPECT_FALSE(edited_unit_matches(g, plan, unwaited));
}

// The block graph is a device function of its coordinates and shared-memory base: a persistent
// kernel of one block that runs every block of the grid itself (in reverse order, over shared
// memory 128 bytes into its own) computes the program, and the function reads neither blockIdx
// nor the kernel's shared memory.
TEST(CudaEmulation, BlockFunctionRunsFromAnotherKernel) {
  Graph g = load(source_path("tests/data/cuda/gated_mlp_wide.fused.weft"));
  ProgramPlan plan = lower_graph(g, target_by_name("h100"));
  ASSERT_EQ(plan.kernels.size(), 1u);
  ASSERT_GT(plan.kernels[0].num_blocks(), 1);
  std::string src = emit_cuda_source(plan);
  size_t fn = src.find("WEFT_BLOCK_FN void k0_block(");
  size_t kernel = src.find("WEFT_KERNEL(k0_threads) k0(");
  ASSERT_NE(fn, std::string::npos);
  ASSERT_NE(kernel, std::string::npos);
  std::string body = src.substr(fn, kernel - fn);
  for (const char* global : {"weft_bid_", "weft_smem_base", "blockIdx", "weft_smem["})
    EXPECT_EQ(body.find(global), std::string::npos) << global;
  for (const char* constant : {"constexpr int k0_threads = ", "constexpr int k0_smem_bytes = ",
                               "constexpr int k0_grid_x = "})
    EXPECT_NE(src.find(constant), std::string::npos) << constant;
  // The wrapper's parameters and the tensors it passes on.
  size_t params_at = kernel + std::string("WEFT_KERNEL(k0_threads) k0(").size();
  std::string params = src.substr(params_at, src.find(") {", params_at) - params_at);
  size_t call = src.find("k0_block(", params_at);
  std::string args = src.substr(call + 9, src.find("weft_bid_x()", call) - call - 9);
  std::string persistent = fmt::format(
      "WEFT_KERNEL(k0_threads) k0_persistent({}) {{\n"
      "  for (int b = k0_grid_x * k0_grid_y * k0_grid_z - 1; b >= 0; --b) {{\n"
      "    k0_block({}b % k0_grid_x, (b / k0_grid_x) % k0_grid_y, b / (k0_grid_x * k0_grid_y),\n"
      "             weft_smem_base() + 128);\n"
      "    weft_sync();\n"
      "  }}\n"
      "}}\n\n",
      params, args);
  std::string edited = src;
  edited.insert(edited.find("extern \"C\" const char* weft_cuda_plan_name"), persistent);
  const std::string launch =
      "WEFT_LAUNCH(k0, k0_grid_x, k0_grid_y, k0_grid_z, k0_threads, "
      "k0_smem_bytes,";
  ASSERT_NE(edited.find(launch), std::string::npos);
  edited.replace(edited.find(launch), launch.size(),
                 "WEFT_LAUNCH(k0_persistent, 1, 1, 1, k0_threads, k0_smem_bytes + 128,");
  EXPECT_TRUE(edited_unit_matches(g, plan, edited));
  // A block function that ignored its coordinates would compute block 0 every time.
  std::string ignoring = edited;
  const std::string coordinates =
      "b % k0_grid_x, (b / k0_grid_x) % k0_grid_y, b / (k0_grid_x * k0_grid_y)";
  ignoring.replace(ignoring.find(coordinates), coordinates.size(), "0, 0, 0");
  EXPECT_FALSE(edited_unit_matches(g, plan, ignoring));
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
        "'{}' -std=c++17 -c -o /dev/null -t 2 -gencode arch=compute_80,code=sm_80 "
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
