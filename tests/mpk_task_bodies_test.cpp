// Task bodies of the persistent mega-kernel without a GPU (codegen/cuda/emit_task_bodies.h): the
// bodies run by one worker CTA in host emulation reproduce the per-kernel CUDA emulation bit for
// bit (the same block code) and the interpreter within tolerance; the fit checks refuse bodies that
// do not fit a worker; the bodies units compile with nvcc for sm_80 and sm_90a.
#include <dlfcn.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>

#include "codegen/cuda/emit_cuda.h"
#include "codegen/cuda/emit_task_bodies.h"
#include "codegen/cuda/prelude.h"
#include "core/error.h"
#include "core/target.h"
#include "interp/compare.h"
#include "interp/interpreter.h"
#include "interp/random_inputs.h"
#include "ir/parser.h"
#include "lower/pipeline.h"
#include "runtime/host_tensors.h"
#include "runtime/program.h"
#include "testing/decoder_program.h"
#include "testing/random_graph.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit", "loads_generated");
// Minutes under ASan at -O0 (runs in the optimized build: make test-heavy).
WEFT_TEST_TIERS_OF("MpkTaskBodiesCompile.EveryExampleCompilesForSm80AndSm90a", "heavy");

namespace weft {
namespace {

using test::source_path;

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

bool has_library_matmul(const ProgramPlan& plan) {
  for (const KernelPlan& k : plan.kernels)
    if (k.library && k.loop_steps.at(0).op == OpKind::matmul) return true;
  return false;
}

struct BodiesRun {
  int mismatched_outputs = 0;  // against the per-kernel emulation, bit for bit
  int unwritten = 0;           // NaN elements in the bodies' outputs (NaN-poisoned buffers)
  std::vector<Comparison> vs_interpreter;
  bool trivial = false;  // a constant input or an all-zero reference output
};

// Runs `unit` (a check unit of `plan`) and the per-kernel unit in emulation on the same seeded
// inputs; compares each output bit for bit with the per-kernel run and within the dtype's
// tolerance with the interpreter.
BodiesRun run_bodies(const Graph& g, const ProgramPlan& plan, const std::string& unit,
                     uint64_t seed = 7) {
  auto inputs = random_inputs(g, seed);
  round_to_input_dtypes(g, inputs);
  BodiesRun r;
  for (const auto& t : inputs) {
    auto [lo, hi] = std::minmax_element(t.data.begin(), t.data.end());
    r.trivial = r.trivial || !(*lo < *hi);
  }
  auto host = host_buffers_of(inputs);
  auto bodies = build_program(plan, Backend::cuda_emulation, unit)->run(host);
  auto per_kernel = load_program(plan, Backend::cuda_emulation)->run(host);
  auto want = evaluate_real(g, inputs, /*f32=*/false);
  EXPECT_EQ(bodies.size(), plan.outputs.size());
  for (size_t i = 0; i < bodies.size() && i < per_kernel.size() && i < want.size(); ++i) {
    const std::vector<float>& got = bodies[i];
    r.unwritten += static_cast<int>(
        std::count_if(got.begin(), got.end(), [](float v) { return std::isnan(v); }));
    if (got.size() != per_kernel[i].size() ||
        std::memcmp(got.data(), per_kernel[i].data(), got.size() * sizeof(float)) != 0)
      ++r.mismatched_outputs;
    DType d = plan.find_tensor(plan.outputs[i])->dtype;
    Tensor<double> gt(want[i].shape, std::vector<double>(got.begin(), got.end()));
    r.vs_interpreter.push_back(compare_outputs(gt, want[i], tolerance_for(d)));
    r.trivial = r.trivial || !(r.vs_interpreter.back().max_ref > 0);
  }
  return r;
}

// The bodies of `g`'s plan, run in emulation by one worker CTA task after task, give the
// per-kernel emulation's outputs: bit for bit when every kernel runs the same code (library
// matmuls take the device GEMM instead of the emulated cuBLAS loop: the interpreter decides).
void expect_bodies_match(const Graph& g, const TaskBodyOptions& options = {},
                         TaskBodyLaunch launch = TaskBodyLaunch::one_cta) {
  ProgramPlan plan = lower_graph(g, target_by_name("h100"));
  BodiesRun r = run_bodies(g, plan, emit_task_bodies_check_unit(plan, options, launch));
  EXPECT_FALSE(r.trivial) << g.name << ": a constant input or an all-zero reference output";
  for (size_t i = 0; i < r.vs_interpreter.size(); ++i)
    EXPECT_TRUE(r.vs_interpreter[i].ok)
        << g.name << " output " << plan.outputs[i] << ": scaled error "
        << r.vs_interpreter[i].scaled_error << " > " << r.vs_interpreter[i].tolerance;
  EXPECT_EQ(r.unwritten, 0) << g.name;
  if (!has_library_matmul(plan)) {
    EXPECT_EQ(r.mismatched_outputs, 0) << g.name;
  }
}

class TaskBodyProgram : public testing::TestWithParam<const char*> {};

// The tiny decoder, the examples at test size and the CUDA test programs (tensor cores, swizzle,
// pipelines, hoisted loads, register accumulators, warp reductions, movement, library kernels).
TEST_P(TaskBodyProgram, OneWorkerCtaMatchesPerKernelEmulation) {
  expect_bodies_match(test::load_graph_file(source_path(GetParam())));
}

INSTANTIATE_TEST_SUITE_P(MpkTaskBodies, TaskBodyProgram,
                         testing::Values("examples/tiny_decoder_step.weft",
                                         "tests/golden/lower/rms_norm_linear.weft",
                                         "tests/golden/lower/rms_norm_linear.fused.weft",
                                         "tests/golden/lower/gated_mlp.weft",
                                         "tests/golden/lower/gated_mlp.fused.weft",
                                         "tests/golden/lower/gqa_attention.weft",
                                         "tests/golden/lower/gqa_attention.fused.weft",
                                         "tests/golden/lower/movement.fused.weft",
                                         "tests/data/cuda/gated_mlp_wide.fused.weft",
                                         "tests/data/cuda/rms_norm_linear_bf16.fused.weft",
                                         "tests/data/cuda/attention_f32.fused.weft",
                                         "tests/data/cuda/attention_hoisted_q.fused.weft",
                                         "tests/data/cuda/library_gemm_cases.weft"));

// Worker CTAs larger than a body: the threads beyond it return at once and the body's named
// barriers count its own threads only (a __syncthreads would wait for them forever).
TEST(MpkTaskBodies, IdleThreadsOfALargerWorkerDoNotBlockTheBody) {
  Graph g = test::load_graph_file(source_path("tests/golden/lower/gqa_attention.fused.weft"));
  ProgramPlan plan = lower_graph(g, target_by_name("h100"));
  TaskBodyFit fit = fit_task_bodies(plan, {});
  TaskBodyOptions wide;
  wide.worker_threads = fit.max_body_threads + 96;
  std::string bodies = emit_cuda_task_bodies(plan, wide);
  EXPECT_NE(
      bodies.find(fmt::format("constexpr int weft_mpk_worker_threads = {};", wide.worker_threads)),
      std::string::npos);
  expect_bodies_match(g, wide);
}

// The same bodies launched kernel by kernel over each kernel's grid (the per-kernel path of the
// mega-kernel's comparison) compute the same outputs.
TEST(MpkTaskBodies, PerKernelLaunchesOfTheBodiesMatch) {
  for (const char* f : {"examples/tiny_decoder_step.weft", "tests/golden/lower/gated_mlp.weft"})
    expect_bodies_match(test::load_graph_file(source_path(f)), {}, TaskBodyLaunch::per_kernel);
}

// Per-kernel launches raise a kernel's shared-memory limit (above 48 KB) at the first launch
// only, not at every one (WEFT_SET_SMEM): host work that launches timed between CUDA events would
// include. Emulated units count the raises; one kernel's shared memory is raised past 48 KB here.
TEST(MpkTaskBodies, PerKernelLaunchesRaiseTheSharedMemoryLimitOnce) {
  Graph g = test::load_graph_file(source_path("tests/golden/lower/rms_norm_linear.fused.weft"));
  ProgramPlan plan = lower_graph(g, target_by_name("h100"));
  auto k = std::find_if(plan.kernels.begin(), plan.kernels.end(),
                        [](const KernelPlan& p) { return !p.library; });
  ASSERT_NE(k, plan.kernels.end());
  k->smem_bytes = 64 * 1024;
  const auto inputs = host_buffers_of(random_inputs(g, 3));
  for (const auto& [what, unit] :
       {std::pair{"the per-kernel unit", emit_cuda_source(plan)},
        std::pair{"the bodies launched per kernel",
                  emit_task_bodies_check_unit(plan, {}, TaskBodyLaunch::per_kernel)}}) {
    SCOPED_TRACE(what);
    const std::string launcher = unit.substr(unit.find("int weft_cuda_launch("));
    ASSERT_EQ(count(launcher, "WEFT_SET_SMEM("), 1);
    auto program = build_program(plan, Backend::cuda_emulation, unit);
    void* handle = dlopen(program->artifact().c_str(), RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(handle, nullptr) << dlerror();
    auto raises = reinterpret_cast<uint64_t (*)()>(dlsym(handle, "weft_smem_limit_raises"));
    ASSERT_NE(raises, nullptr);
    EXPECT_EQ(raises(), 0u);
    (void)program->run(inputs);
    EXPECT_EQ(raises(), 1u);
    (void)program->time(inputs, 2, 5);
    EXPECT_EQ(raises(), 1u) << "after 8 launches";
    dlclose(handle);
  }
}

// What the contract promises about the text: the constants, the entry's signature, only named
// barriers in the bodies, nothing of a kernel launch; the per-kernel unit has no named barrier.
TEST(MpkTaskBodies, TextFollowsTheContract) {
  Graph g = test::load_graph_file(source_path("examples/tiny_decoder_step.weft"));
  ProgramPlan plan = lower_graph(g, target_by_name("h100"));
  std::string bodies = emit_cuda_task_bodies(plan);
  TaskBodyFit fit = fit_task_bodies(plan, {});
  EXPECT_EQ(fit.worker_threads, 128);
  EXPECT_NE(bodies.find("constexpr int weft_mpk_worker_threads = 128;\n"), std::string::npos);
  EXPECT_NE(
      bodies.find(fmt::format("constexpr int weft_mpk_body_smem_bytes = {};", fit.body_smem_bytes)),
      std::string::npos);
  EXPECT_NE(bodies.find("WEFT_DEV void weft_mpk_task(uint32_t kernel, "), std::string::npos);
  EXPECT_NE(bodies.find("void* const* inputs, void* const* outputs, unsigned char* workspace)"),
            std::string::npos);
  // No tensor is __restrict__ unless named read-only for the launch (TaskBodyOptions).
  for (const char* absent : {"weft_sync()", "__syncthreads", "WEFT_KERNEL", "WEFT_LAUNCH",
                             "extern \"C\"", "weft_bid_", "weft_smem_base", "weft_gemm(",
                             "weft_gtid", "cublas", "blockIdx", "threadIdx", "__restrict__"})
    EXPECT_EQ(bodies.find(absent), std::string::npos) << absent;
  // Emulation checks every entry's thread (no protocol thread may run a body).
  EXPECT_EQ(count(bodies, "weft_task_body_entry();"), 1);
  // Only the tensors named read-only for the launch are __restrict__; an output cannot be.
  TaskBodyOptions read_only;
  read_only.read_only_tensors = {plan.inputs.at(1)};
  const std::string restricted = emit_cuda_task_bodies(plan, read_only);
  const std::regex restrict_param(R"(__restrict__ T(\d+))");
  int restricted_params = 0;
  for (std::sregex_iterator m(restricted.begin(), restricted.end(), restrict_param), end; m != end;
       ++m, ++restricted_params)
    EXPECT_EQ(plan.tensors.at(std::stoul((*m)[1].str())).name, plan.inputs.at(1));
  EXPECT_GT(restricted_params, 0);
  read_only.read_only_tensors = {plan.outputs.at(0)};
  EXPECT_THROW((void)fit_task_bodies(plan, read_only), InternalError);
  EXPECT_GT(count(bodies, "weft_bar_sync(1, 128);"), 0);
  int gemms = 0;
  for (const KernelPlan& k : plan.kernels)
    gemms += k.library && k.loop_steps[0].op == OpKind::matmul;
  EXPECT_EQ(count(bodies, "weft_cta_gemm<"), gemms);
  // One case per kernel picks its tensors and its code; one case per code runs it.
  EXPECT_EQ(count(bodies, ": code = "), static_cast<int>(plan.kernels.size()));
  EXPECT_EQ(count(bodies, "case "),
            static_cast<int>(plan.kernels.size()) + count(bodies, "WEFT_BLOCK_FN void "));
  std::string per_kernel = emit_cuda_source(plan);
  ASSERT_NE(per_kernel.find(cuda_prelude()), std::string::npos);
  EXPECT_EQ(count(per_kernel.substr(per_kernel.find(cuda_prelude()) + cuda_prelude().size()),
                  "weft_bar_sync("),
            0);
}

// A model's layers run one copy of each kernel's code: a third layer adds kernels but no code,
// in the task bodies and in the per-kernel unit, and the shared code computes what the
// interpreter does.
TEST(MpkTaskBodies, LayersShareOneCopyOfTheirCode) {
  struct Emitted {
    size_t kernels = 0;
    int block_functions = 0, shared = 0, kernel_functions = 0;
  };
  auto emitted = [](int64_t layers) {
    DecoderConfig c = decoder_config("qwen3-tiny");
    c.layers = layers;
    const ProgramPlan plan =
        lower_graph(parse_graph(decoder_program(c), "qwen3-tiny"), target_by_name("h100"));
    const std::string bodies = emit_cuda_task_bodies(plan, {});
    const std::string per_kernel = emit_cuda_source(plan);
    return Emitted{plan.kernels.size(), count(bodies, "WEFT_BLOCK_FN void "),
                   count(bodies, ": the code of kernel "), count(per_kernel, "WEFT_KERNEL(")};
  };
  const Emitted two = emitted(2), three = emitted(3);
  EXPECT_GT(three.kernels, two.kernels);
  EXPECT_EQ(three.block_functions, two.block_functions);
  EXPECT_EQ(three.kernel_functions, two.kernel_functions);
  EXPECT_LT(two.block_functions, static_cast<int>(two.kernels) / 2 + 2);
  EXPECT_EQ(two.block_functions + two.shared, static_cast<int>(two.kernels));

  DecoderConfig c = decoder_config("qwen3-tiny");
  expect_bodies_match(parse_graph(decoder_program(c), "qwen3-tiny"));
}

// Kernels that differ in a constant keep their own code: sharing it would compute the first
// kernel's epsilon for both.
TEST(MpkTaskBodies, KernelsThatDifferInAConstantKeepTheirOwnCode) {
  auto program = [](const char* eps) {
    return parse_graph(fmt::format("program two_norms\n"
                                   "input X: f32[4, 64]\n"
                                   "A = rms_norm(X, eps=1e-6)\n"
                                   "B = rms_norm(A, eps={})\n"
                                   "output B\n",
                                   eps),
                       "two_norms");
  };
  auto functions = [](const Graph& g) {
    return count(emit_cuda_task_bodies(lower_graph(g, target_by_name("h100")), {}),
                 "WEFT_BLOCK_FN void ");
  };
  const Graph same = program("1e-6"), different = program("1/2");
  EXPECT_LT(functions(same), functions(different));
  expect_bodies_match(different);
}

// The NaN-poisoned outputs catch a body that does not cover its kernel: every task given block
// 0's coordinates leaves the other blocks' tiles unwritten.
TEST(MpkTaskBodies, UnwrittenTilesAreCaught) {
  Graph g = test::load_graph_file(source_path("tests/golden/lower/gqa_attention.fused.weft"));
  ProgramPlan plan = lower_graph(g, target_by_name("h100"));
  ASSERT_GT(plan.kernels.at(0).num_blocks(), 1);
  std::string unit = emit_task_bodies_check_unit(plan, {}, TaskBodyLaunch::one_cta);
  const std::string call = "weft_mpk_task(0u, b % ";
  ASSERT_EQ(count(unit, call), 1);
  size_t at = unit.find(call) + std::string("weft_mpk_task(0u, ").size();
  unit.replace(at, unit.find(", weft_smem_base()", at) - at, "0, 0, 0");
  BodiesRun r = run_bodies(g, plan, unit);
  EXPECT_FALSE(r.trivial);
  EXPECT_GT(r.unwritten, 0);
  EXPECT_GT(r.mismatched_outputs, 0);
  EXPECT_TRUE(std::any_of(r.vs_interpreter.begin(), r.vs_interpreter.end(),
                          [](const Comparison& c) { return !c.ok; }));
}

// The device GEMM's batch offsets are checked: the library_gemm_cases unit with one operand's
// batch offset dropped computes other products.
TEST(MpkTaskBodies, AWrongGemmBatchOffsetIsCaught) {
  Graph g = test::load_graph_file(source_path("tests/data/cuda/library_gemm_cases.weft"));
  ProgramPlan plan = lower_graph(g, target_by_name("h100"));
  std::string unit = emit_task_bodies_check_unit(plan, {}, TaskBodyLaunch::one_cta);
  size_t call = unit.find("weft_cta_gemm<", unit.find("WEFT_BLOCK_FN"));
  ASSERT_NE(call, std::string::npos);
  size_t at = unit.find(" + 0 + (bb / ", call);
  ASSERT_LT(at, unit.find('\n', call));
  unit.replace(at, 6, " + 0 * ");
  BodiesRun r = run_bodies(g, plan, unit);
  EXPECT_FALSE(r.trivial);
  EXPECT_EQ(r.unwritten, 0);
  EXPECT_FALSE(r.vs_interpreter.at(0).ok);
}

// Random programs (every operator kind, f32 / f16 / bf16, graph-defined and library kernels) in
// worker CTAs of the default size and of a larger one.
TEST(MpkTaskBodies, RandomProgramsMatchPerKernelEmulation) {
  int tested = 0, with_blocks = 0;
  for (uint64_t seed = 1; tested < 8 && seed < 200; ++seed) {
    Graph g = random_graph(seed);
    ProgramPlan plan;
    try {
      plan = lower_graph(g, target_by_name("h100"));
    } catch (const UserError&) {
      continue;  // not every random program fits a GPU block
    }
    // Programs with a one-element input (constant) or an all-zero output test nothing.
    auto inputs = random_inputs(g, 7);
    round_to_input_dtypes(g, inputs);
    auto want = evaluate_real(g, inputs, false);
    bool trivial = false;
    for (const auto& t : inputs) trivial = trivial || t.data.size() < 2;
    for (const auto& t : want) {
      double m = 0;
      for (double v : t.data) m = std::max(m, std::abs(v));
      trivial = trivial || !(m > 0) || !std::isfinite(m);
    }
    if (trivial) continue;
    SCOPED_TRACE(fmt::format("random_graph({})", seed));
    TaskBodyOptions options;
    if (tested % 2 == 1) options.worker_threads = fit_task_bodies(plan, {}).worker_threads + 64;
    expect_bodies_match(g, options);
    ++tested;
    with_blocks += std::any_of(plan.kernels.begin(), plan.kernels.end(),
                               [](const KernelPlan& k) { return !k.library; });
  }
  EXPECT_EQ(tested, 8);
  EXPECT_GE(with_blocks, 3);
}

// ---------------------------------------------------------------- fit checks

std::string user_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.message();
  }
  return "";
}

TEST(MpkTaskBodies, BodiesThatDoNotFitAreRefusedWithTheNumbers) {
  Graph g = test::load_graph_file(source_path("tests/data/cuda/gated_mlp_wide.fused.weft"));
  ProgramPlan plan = lower_graph(g, target_by_name("h100"));
  const KernelPlan& k = plan.kernels.at(0);
  TaskBodyFit fit = fit_task_bodies(plan, {});
  EXPECT_EQ(fit.worker_threads, k.threads);
  EXPECT_EQ(fit.smem_budget_bytes, 227 * 1024);
  EXPECT_EQ(fit.body_smem_bytes, k.smem_bytes);

  TaskBodyOptions few;
  few.worker_threads = static_cast<int>(k.threads) - 32;
  std::string e = user_error([&] { emit_cuda_task_bodies(plan, few); });
  for (const std::string& part :
       {k.name, std::to_string(k.threads), std::to_string(few.worker_threads)})
    EXPECT_NE(e.find(part), std::string::npos) << e << " lacks " << part;

  TaskBodyOptions small;
  small.smem_budget_bytes = k.smem_bytes - 1;
  e = user_error([&] { fit_task_bodies(plan, small); });
  for (const std::string& part :
       {k.name, std::to_string(k.smem_bytes), std::to_string(k.smem_bytes - 1)})
    EXPECT_NE(e.find(part), std::string::npos) << e << " lacks " << part;

  TaskBodyOptions reserve;
  reserve.runtime_smem_reserve_bytes = 227 * 1024 - k.smem_bytes + 1;
  e = user_error([&] { fit_task_bodies(plan, reserve); });
  EXPECT_NE(e.find("reserved for the runtime"), std::string::npos) << e;
  reserve.runtime_smem_reserve_bytes -= 1;
  EXPECT_EQ(fit_task_bodies(plan, reserve).smem_budget_bytes, k.smem_bytes);

  for (int bad : {100, 16, 2048}) {
    TaskBodyOptions o;
    o.worker_threads = bad;
    e = user_error([&] { fit_task_bodies(plan, o); });
    EXPECT_NE(e.find(std::to_string(bad)), std::string::npos) << e;
  }
  // a100's smaller shared memory: the budget follows the target.
  ProgramPlan a100 = lower_graph(g, target_by_name("a100"));
  EXPECT_EQ(fit_task_bodies(a100, {}).smem_budget_bytes, 163 * 1024);
  EXPECT_THROW(fit_task_bodies(lower_graph(g, target_by_name("cpu")), {}), UserError);
}

// A plan of library kernels only: workers of 256 threads, the device GEMM's tiles in shared
// memory, one task per kernel.
TEST(MpkTaskBodies, LibraryOnlyPlanFigures) {
  Graph g = test::load_graph_file(source_path("tests/golden/lower/rms_norm_linear.weft"));
  ProgramPlan plan = lower_graph(g, target_by_name("h100"));
  TaskBodyFit fit = fit_task_bodies(plan, {});
  EXPECT_EQ(fit.worker_threads, 256);
  int gemms = 0;
  for (const TaskBodyFigure& f : fit.bodies) {
    EXPECT_TRUE(f.library);
    EXPECT_EQ(f.tasks, 1);
    EXPECT_EQ(f.threads, 256);
    gemms += f.gemm;
    if (f.gemm) {
      EXPECT_GT(f.smem_bytes, 0);
    } else {
      EXPECT_EQ(f.smem_bytes, 0);
    }
  }
  EXPECT_EQ(gemms, 1);
  CtaGemmTile gemv = cta_gemm_tile(1, 4096), square = cta_gemm_tile(512, 512);
  EXPECT_EQ(gemv.bm, 1);
  EXPECT_EQ(gemv.bn, 256);
  EXPECT_EQ(square.bm, 64);
  EXPECT_EQ(square.bn, 64);
  EXPECT_EQ(square.smem_bytes(), 4 * (64 * 17 + 16 * 64));
}

// ---------------------------------------------------------------- nvcc

std::string find_nvcc() {
  if (const char* e = std::getenv("WEFT_NVCC"); e && *e) return e;
  for (const char* p : {"/usr/local/cuda/bin/nvcc", "/usr/bin/nvcc"})
    if (std::filesystem::exists(p)) return p;
  return std::system("command -v nvcc > /dev/null 2>&1") == 0 ? "nvcc" : "";
}

// The bodies of the tiny decoder and of every example at full size, in a unit with a kernel
// calling weft_mpk_task, compile for sm_80 and sm_90a with all warnings as errors; ptxas's
// resource usage gives the registers per thread (printed: docs/mpk.md quotes it).
TEST(MpkTaskBodiesCompile, EveryExampleCompilesForSm80AndSm90a) {
  std::string nvcc = find_nvcc();
  if (nvcc.empty()) GTEST_SKIP() << "nvcc not found";
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(source_path("examples")))
    if (e.path().extension() == ".weft") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 7u);
  std::string dir = testing::TempDir() + "/weft_bodies_nvcc_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::regex used(R"(Used (\d+) registers)");
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    ProgramPlan plan = lower_graph(test::load_graph_file(f), target_by_name("h100"));
    TaskBodyFit fit = fit_task_bodies(plan, {});
    std::string cu = dir + "/" + std::filesystem::path(f).stem().string() + ".cu";
    std::ofstream(cu) << emit_task_bodies_check_unit(plan, {}, TaskBodyLaunch::one_cta);
    std::string log = cu + ".log";
    std::string cmd = fmt::format(
        "'{}' -std=c++17 -c -o /dev/null -gencode arch=compute_80,code=sm_80 "
        "-gencode arch=compute_90a,code=sm_90a -Werror all-warnings --resource-usage "
        "-Xcompiler -Wall,-Wextra,-Werror '{}' > '{}' 2>&1",
        nvcc, cu, log);
    int rc = std::system(cmd.c_str());
    std::string text = test::read_text(log);
    EXPECT_EQ(rc, 0) << cmd << "\n" << text.substr(0, 4000);
    // ptxas prints one "Used N registers" line per kernel and architecture.
    std::vector<int> regs;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), used);
         it != std::sregex_iterator(); ++it)
      regs.push_back(std::stoi((*it)[1].str()));
    ASSERT_EQ(regs.size(), 2u) << text.substr(0, 4000);
    // One worker CTA per SM must have the registers: 64 K 32-bit registers per SM on both.
    const int max_regs = std::max(regs[0], regs[1]);
    EXPECT_LE(int64_t{max_regs} * fit.worker_threads, 65536) << plan.name;
    int graph = 0, library = 0, gemm = 0;
    int64_t tasks = 0;
    for (const TaskBodyFigure& b : fit.bodies) {
      graph += !b.library;
      library += b.library && !b.gemm;
      gemm += b.gemm;
      tasks += b.tasks;
    }
    std::printf(
        "%s: %d graph-defined + %d library (%d GEMM) bodies, %lld tasks; worker %d threads; "
        "largest body %d threads, %lld bytes of shared memory; registers per thread sm_80 %d, "
        "sm_90a %d\n",
        plan.name.c_str(), graph, library + gemm, gemm, static_cast<long long>(tasks),
        fit.worker_threads, fit.max_body_threads, static_cast<long long>(fit.body_smem_bytes),
        regs[0], regs[1]);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace weft
