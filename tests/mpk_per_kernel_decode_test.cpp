// The per-kernel decode loop on the device (mpk/runtime/per_kernel_decode.h): the same bodies as
// the persistent kernel launched one by one, the decode loop's bodies as one-CTA kernels around the
// plan's grids, decode the persistent kernel's tokens with bit-identical logits, and the host-hook
// path's; the unit launches the decode bodies as kernels in the loop's order and adds no barrier
// of its own. In host emulation; the CUDA graph only on a GPU (skipped here).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "codegen/cuda/emit_task_bodies.h"
#include "codegen/cuda/prelude.h"
#include "core/error.h"
#include "core/target.h"
#include "lower/pipeline.h"
#include "mpk/bench/megakernel_bench.h"
#include "mpk/decode_layout.h"
#include "mpk/passes/add_decode_tasks.h"
#include "mpk/runtime/decode_bodies.h"
#include "mpk/runtime/megakernel_program.h"
#include "mpk/runtime/per_kernel_decode.h"
#include "runtime/cuda_runtime.h"
#include "runtime/program.h"
#include "testing/decode_demo.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit", "loads_generated");
WEFT_TEST_TIERS_OF("MpkPerKernelDecodeGpu.*", "gpu");

namespace weft {
namespace {

ProgramPlan load_plan(const char* path) {
  return lower_graph(test::load_graph_file(test::source_path(path)), target_by_name("h100"));
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// The per-kernel loop on the device (launches; with `graph`, on a GPU, a CUDA graph after the
// first step) against the persistent kernel's resident decode (one token per launch) and the
// per-kernel path with host hooks: the same tokens, every step's logits bit for bit (on a GPU, bit
// for bit with the persistent kernel's).
void expect_per_kernel_loop_decodes_like_the_persistent_kernel(const char* path,
                                                               const DecodeOptions& d,
                                                               bool emulated, bool graph) {
  SCOPED_TRACE(path);
  const ProgramPlan plan = load_plan(path);
  auto per_kernel = load_program(plan, emulated ? Backend::cuda_emulation : Backend::cuda);
  const DecodeResult want =
      decode_with(plan, d, [&](const auto& in) { return per_kernel->run(in); });
  ASSERT_EQ(want.logits.size(), static_cast<size_t>(d.tokens));
  const std::set<int> distinct(want.tokens.begin(), want.tokens.end());
  ASSERT_GT(distinct.size(), 2u) << "the decoded sequence is trivial";
  ASSERT_NE(want.logits.front(), want.logits.back()) << "the logits do not change";

  MegakernelProgramOptions o;
  o.mpk.assign = {emulated ? 3 : 16, Dispatch::hybrid};
  o.mpk.data_dependent = kernels_reading(plan, "Kc");
  o.mpk.decode_on_device = true;
  o.kernel.schedulers = 2;
  o.kernel.watchdog_s = 60;
  o.emulated = emulated;
  const ResidentDecode resident = MegakernelProgram(plan, o).decode(d, {1, true});
  EXPECT_EQ(resident.decode.tokens, want.tokens);

  const PerKernelDecoder loop(plan, emulated);
  const PerKernelDecode got = loop.decode(d, {graph, true});
  EXPECT_EQ(got.decode.tokens, want.tokens);
  EXPECT_EQ(got.decode.tokens, resident.decode.tokens);
  ASSERT_EQ(got.decode.logits.size(), want.logits.size());
  ASSERT_EQ(resident.decode.logits.size(), want.logits.size());
  for (size_t step = 0; step < want.logits.size(); ++step) {
    EXPECT_TRUE(same_bits(got.decode.logits[step], resident.decode.logits[step]))
        << "step " << step << ": the logits differ from the persistent kernel's";
    // On a GPU the host-hook path's library matmuls run cuBLAS, the bodies the device GEMM.
    if (emulated) {
      EXPECT_TRUE(same_bits(got.decode.logits[step], want.logits[step]))
          << "step " << step << ": the logits differ from the host-hook path's";
    }
  }
  EXPECT_EQ(got.launched_steps + got.graph_steps, d.tokens);
  EXPECT_EQ(got.graph_steps, graph ? d.tokens - 1 : 0);
  EXPECT_EQ(got.bytes_per_step, resident.bytes_per_launch);
  EXPECT_EQ(got.setup_bytes, resident.setup_bytes);
  EXPECT_GT(got.decode.run.seconds, 0);
  if (emulated) {
    EXPECT_THROW(loop.decode(d, {true, false}), UserError);  // a graph needs a GPU
  }
}

// As in mpk_decode_tasks_test.cpp: sanitized builds emulate about 4x slower, so the tiny decoder
// runs fewer tokens there and Qwen3-tiny is skipped.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

TEST(MpkPerKernelDecode, TheTinyDecoderDecodesLikeThePersistentKernel) {
  DecodeOptions d;
  d.tokens = kSanitized ? 4 : 6;
  expect_per_kernel_loop_decodes_like_the_persistent_kernel("examples/tiny_decoder_step.weft", d,
                                                            true, false);
}

TEST(MpkPerKernelDecode, Qwen3TinyDecodesLikeThePersistentKernel) {
  if (kSanitized) GTEST_SKIP() << "emulating Qwen3-tiny takes minutes in sanitized builds";
  DecodeOptions q;
  q.tokens = 4;
  q.prompt = {5, 17};
  q.normal_std = 0.1;  // at 0.02 this shallow random model keeps predicting its input token
  expect_per_kernel_loop_decodes_like_the_persistent_kernel("examples/qwen3_tiny_decode_step.weft",
                                                            q, true, false);
}

// The unit's contract: one weft_cuda_launch is a whole step, the decode bodies launched as
// one-CTA kernels (embed and the rotary tables before every plan kernel, the finish after every
// one), the plan's kernels as their grids in plan order; the unit adds no barrier to the bodies'
// (every named barrier in it is the prelude's or a body's).
TEST(MpkPerKernelDecode, TheUnitLaunchesTheDecodeBodiesAroundThePlansKernels) {
  for (const char* path :
       {"examples/tiny_decoder_step.weft", "examples/qwen3_tiny_decode_step.weft"}) {
    SCOPED_TRACE(path);
    const ProgramPlan plan = load_plan(path);
    const std::string unit = emit_per_kernel_decode_unit(plan);
    const size_t nk = plan.kernels.size();
    auto launch = [&](size_t kernel, const std::string& grid, const std::string& name) {
      return fmt::format(
          "WEFT_LAUNCH(weft_mpk_check, {}, weft_mpk_worker_threads, weft_mpk_body_smem_bytes, "
          "stream, {}u, a);  // {}\n",
          grid, kernel, name);
    };
    std::vector<size_t> at;
    const std::vector<DecodeOp> ops = decode_ops(decode_interface(plan));
    ASSERT_EQ(ops.size(), plan.find_tensor("COS") ? 3u : 2u);
    for (size_t j = 0; j + 1 < ops.size(); ++j)
      at.push_back(unit.find(launch(nk + j, "1, 1, 1", ops[j].name)));
    for (size_t i = 0; i < nk; ++i) {
      const KernelPlan& k = plan.kernels[i];
      const std::string grid =
          k.library ? "1, 1, 1" : fmt::format("{}, {}, {}", k.grid[0], k.grid[1], k.grid[2]);
      at.push_back(unit.find(launch(i, grid, k.name)));
    }
    at.push_back(unit.find(launch(nk + ops.size() - 1, "1, 1, 1", "decode_finish")));
    EXPECT_EQ(ops.back().name, "decode_finish");
    for (size_t n = 0; n < at.size(); ++n) {
      ASSERT_NE(at[n], std::string::npos) << "launch " << n << " missing";
      if (n > 0) {
        EXPECT_LT(at[n - 1], at[n]) << "launch " << n << " out of order";
      }
    }
    EXPECT_EQ(count(unit, "WEFT_LAUNCH(weft_mpk_check,"), static_cast<int>(nk + ops.size()));
    // The bodies' text (prelude, plan bodies, decode bodies) holds every barrier of the unit.
    const std::string bodies = cuda_prelude() +
                               emit_cuda_task_bodies(plan, with_decode_bodies(plan, {})) +
                               emit_decode_task_bodies(plan);
    for (const char* barrier : {"weft_bar_sync(", "weft_sync(", "__syncthreads("})
      EXPECT_EQ(count(unit, barrier), count(bodies, barrier)) << barrier;
    const std::string wrapper = unit.substr(unit.find("struct weft_mpk_args"));
    for (const char* sync : {"sync", "__threadfence", "atomic"})
      EXPECT_EQ(wrapper.find(sync), std::string::npos) << sync;
  }
}

TEST(MpkPerKernelDecode, BenchTimesEveryStepOfTheLaunches) {
  const ProgramPlan plan = load_plan("examples/tiny_decoder_step.weft");
  const PerKernelDecoder loop(plan, true);
  const Timing t = bench_per_kernel_decode(loop, 2, false, 1);
  EXPECT_EQ(t.reps, 1);
  EXPECT_GT(t.median_s, 0);
  EXPECT_THROW(bench_per_kernel_decode(loop, 2, true, 1), UserError);  // no GPU in emulation
}

// On a GPU (skipped without one): the same with the step captured as a CUDA graph and replayed
// per token, and with launches one by one.
TEST(MpkPerKernelDecodeGpu, DecodesLikeThePersistentKernelAsLaunchesAndAsACudaGraph) {
  if (!cuda_unavailable_reason().empty()) GTEST_SKIP() << cuda_unavailable_reason();
  DecodeOptions d;
  d.tokens = 16;
  for (bool graph : {false, true})
    expect_per_kernel_loop_decodes_like_the_persistent_kernel("examples/tiny_decoder_step.weft", d,
                                                              false, graph);
  DecodeOptions q;
  q.tokens = 16;
  q.prompt = {5, 17};
  q.normal_std = 0.1;
  expect_per_kernel_loop_decodes_like_the_persistent_kernel("examples/qwen3_tiny_decode_step.weft",
                                                            q, false, true);
}

}  // namespace
}  // namespace weft
