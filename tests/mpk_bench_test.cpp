// The measuring side of the persistent kernel: the empty-task chain (graph, blob, hops from the
// trace), timed launches, the CUDA-graph timing's refusals and the step's weight bytes. Timings
// here are only checked for being measured, never for speed (benchmarks: docs/benchmarks.md).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/target.h"
#include "interp/random_inputs.h"
#include "lower/pipeline.h"
#include "mpk/bench/hop_chain.h"
#include "mpk/bench/megakernel_bench.h"
#include "mpk/runtime/megakernel.h"
#include "mpk/runtime/megakernel_program.h"
#include "mpk/runtime/megakernel_run.h"
#include "runtime/cuda_runtime.h"
#include "runtime/host_tensors.h"
#include "runtime/program.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit", "loads_generated");
WEFT_TEST_TIERS_OF("MpkBenchGpu.*", "gpu");

namespace weft {
namespace {

TEST(MpkHopChain, TheChainIsOneDependentPathAndItsBlobRoundTrips) {
  for (bool jit : {false, true}) {
    DeviceGraph g = empty_chain_graph(7, 3, jit);
    ASSERT_EQ(g.tasks.size(), 7u);
    ASSERT_EQ(g.events.size(), 8u);  // begin, end and one per hop
    for (uint32_t i = 0; i < 7; ++i) {
      const TaskDesc& t = g.tasks[i];
      EXPECT_EQ(t.op, kNoOp);
      EXPECT_EQ(t.wait, i == 0 ? weft_mpk::kBeginEvent : 1 + i) << i;
      EXPECT_EQ(t.trigger, i == 6 ? weft_mpk::kEndEvent : 2 + i) << i;
      EXPECT_EQ((t.flags & kTaskJit) != 0, jit);
    }
    // AOT: task i on worker i % 3, so every hop crosses workers.
    EXPECT_EQ(g.list_tasks.size(), jit ? 0u : 7u);
    if (!jit) {
      EXPECT_EQ(g.list_offsets, (std::vector<uint32_t>{0, 3, 5, 7}));
    }
    DeviceGraph back = decode_task_graph(encode_device_graph(g));
    EXPECT_EQ(back.tasks.size(), g.tasks.size());
    EXPECT_EQ(back.list_tasks, g.list_tasks);
    EXPECT_EQ(encode_device_graph(back), encode_device_graph(g));
  }
  EXPECT_THROW(empty_chain_graph(1, 2, false), UserError);
  EXPECT_THROW(empty_chain_graph(4, 0, false), UserError);
}

TEST(MpkHopChain, RunsInOrderInEmulationAndGivesEveryHop) {
  for (bool jit : {false, true}) {
    HopBenchOptions o;
    o.tasks = 40;
    o.workers = 3;
    o.jit = jit;
    o.schedulers = jit ? 2 : 1;
    o.worker_threads = 32;
    o.reps = 2;
    o.emulated = true;
    o.watchdog_s = 60;
    HopBench h = bench_hops(o);
    EXPECT_EQ(h.hops.hops, 2 * 39);
    EXPECT_LE(h.hops.min_ns, h.hops.median_ns);
    EXPECT_LE(h.hops.median_ns, h.hops.max_ns);
    EXPECT_GT(h.hops.max_ns, 0);
    EXPECT_EQ(h.chain.reps, 2);
    EXPECT_GT(h.chain.median_s, 0);
  }
}

TEST(MpkHopChain, ChainHopsRejectsATraceOutOfOrder) {
  std::vector<TaskSpan> trace = {{10, 20, 0, 0}, {25, 30, 1, 1}, {35, 40, 0, 2}};
  HopFigures f = chain_hops(trace, 3, 1);
  EXPECT_EQ(f.hops, 2);
  EXPECT_EQ(f.min_ns, 5);
  EXPECT_EQ(f.max_ns, 5);
  trace[2].start = 29;  // task 2 before task 1 ended: a broken dependency
  EXPECT_THROW(chain_hops(trace, 3, 1), InternalError);
}

ProgramPlan gpu_plan(const char* path) {
  return lower_graph(test::load_graph_file(test::source_path(path)), target_by_name("h100"));
}

// Every input of `plan` filled with `value`.
std::vector<std::vector<float>> constant_inputs(const ProgramPlan& plan, float value) {
  std::vector<std::vector<float>> inputs;
  for (const std::string& name : plan.inputs)
    inputs.emplace_back(static_cast<size_t>(numel(plan.find_tensor(name)->shape)), value);
  return inputs;
}

TEST(MpkBench, EmulatedBenchTimesEveryPathOnTheSameInputs) {
  ProgramPlan plan = gpu_plan("tests/golden/mpk/fork.weft");
  MegakernelProgramOptions o;
  o.mpk.assign = {2, Dispatch::hybrid};
  o.kernel.watchdog_s = 60;
  MegakernelProgram mk(plan, o);
  auto per_kernel = load_program(plan, Backend::cuda_emulation);
  const std::vector<std::vector<float>> inputs = constant_inputs(plan, 0.5f);
  MegakernelBenchOptions bo;
  bo.warmup = 0;
  bo.reps = 2;
  bo.iterations_per_launch = 3;
  MegakernelBench b = bench_megakernel(mk, *per_kernel, inputs, bo);
  EXPECT_EQ(b.per_kernel.reps, 2);
  EXPECT_EQ(b.persistent.reps, 2);
  ASSERT_TRUE(b.persistent_batched.has_value());
  EXPECT_EQ(b.batched_iterations, 3u);
  EXPECT_FALSE(b.cuda_graph.has_value());  // emulation: no CUDA graph, no bandwidth, no floor
  EXPECT_FALSE(b.floor_s().has_value());
  EXPECT_EQ(b.weight_bytes, step_weight_bytes(plan));
  // A timed run leaves the program usable: a run after it still gives the per-kernel outputs.
  EXPECT_EQ(mk.run(inputs).outputs, per_kernel->run(inputs));
}

TEST(MpkBench, StepWeightBytesLeaveOutTheDecodeState) {
  ProgramPlan plan = gpu_plan("examples/tiny_decoder_step.weft");
  int64_t all = 0, state = 0;
  for (const std::string& n : plan.inputs) {
    const int64_t bytes = plan.find_tensor(n)->bytes();
    all += bytes;
    if (n == "X" || n == "M" || n.rfind("Kc", 0) == 0 || n.rfind("Vc", 0) == 0) state += bytes;
  }
  ASSERT_GT(state, 0);
  EXPECT_EQ(step_weight_bytes(plan), all - state);
  ProgramPlan fork = gpu_plan("tests/golden/mpk/fork.weft");  // not a decode step: every input
  int64_t fork_all = 0;
  for (const std::string& n : fork.inputs) fork_all += fork.find_tensor(n)->bytes();
  EXPECT_EQ(step_weight_bytes(fork), fork_all);
}

TEST(MpkBench, CudaGraphTimingTakesOnlyCudaPrograms) {
  ProgramPlan plan = gpu_plan("tests/golden/mpk/fork.weft");
  auto emulated = load_program(plan, Backend::cuda_emulation);
  const std::vector<std::vector<float>> inputs = constant_inputs(plan, 1.0f);
  try {
    time_cuda_graph(*emulated, inputs, 0, 1);
    FAIL() << "a cuda-emulation program ran as a CUDA graph";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("only cuda programs"), std::string::npos) << e.what();
  }
}

// On a GPU: the chain across 8 worker CTAs, and the bench of the tiny decode step with its CUDA
// graph, its bandwidth probe and its floor.
TEST(MpkBenchGpu, HopsAndTheDecodeStepBenchRunOnTheDevice) {
  if (!cuda_unavailable_reason().empty()) GTEST_SKIP() << cuda_unavailable_reason();
  HopBenchOptions h;
  h.tasks = 200;
  h.workers = 8;
  h.reps = 2;
  h.emulated = false;
  h.arch = target_for_device(require_cuda_device()).arch;
  HopBench hops = bench_hops(h);
  EXPECT_EQ(hops.hops.hops, 2 * 199);
  const Graph graph = test::load_graph_file(test::source_path("examples/tiny_decoder_step.weft"));
  ProgramPlan plan = lower_graph(graph, target_for_device(require_cuda_device()));
  MegakernelProgramOptions o;
  o.mpk.assign = {8, Dispatch::hybrid};
  o.emulated = false;
  o.arch = h.arch;
  MegakernelProgram mk(plan, o);
  auto per_kernel = load_program(plan, Backend::cuda);
  // Seeded inputs, not constants: constant ones make this decoder's outputs NaN, and a check that
  // a replay changed nothing would then compare NaN with NaN.
  auto seeded = random_inputs(graph, 5);
  round_to_input_dtypes(graph, seeded);
  const std::vector<std::vector<float>> inputs = host_buffers_of(seeded);
  const auto want = per_kernel->run(inputs);
  for (const auto& o : want)
    for (float v : o)
      ASSERT_FALSE(std::isnan(v)) << "the per-kernel run gives NaN on seeded inputs";
  MegakernelBenchOptions bo;
  bo.reps = 3;
  MegakernelBench b = bench_megakernel(mk, *per_kernel, inputs, bo);
  ASSERT_TRUE(b.cuda_graph.has_value());
  ASSERT_TRUE(b.floor_s().has_value());
  EXPECT_GT(*b.bandwidth_bytes_per_s, 1e9);
  // The graph replays the same launches: the program's outputs are unchanged after it.
  const auto after = per_kernel->run(inputs);
  ASSERT_EQ(after.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(after[i].size(), want[i].size());
    EXPECT_EQ(std::memcmp(after[i].data(), want[i].data(), want[i].size() * sizeof(float)), 0)
        << "output " << plan.outputs[i] << " changed after the graph replay";
  }
}

}  // namespace
}  // namespace weft
