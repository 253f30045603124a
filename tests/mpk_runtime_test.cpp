// The task-graph runtime on the host: every worker count, dispatch mode and random delays give
// the outputs of sequential execution bit for bit; broken graphs trip the watchdog instead of
// hanging. In the tsan tier (run under ThreadSanitizer).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <map>

#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "core/dtype_convert.h"
#include "core/target.h"
#include "lower/pipeline.h"
#include "mpk/encode.h"
#include "mpk/passes/pipeline.h"
#include "mpk/runtime/host_runtime.h"
#include "mpk/runtime/trace.h"
#include "runtime/program.h"
#include "testing/decode_demo.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit", "loads_generated");
WEFT_TEST_TIERS_OF("MpkRuntime.*", "tsan");
WEFT_TEST_TIERS_OF("MpkTrace.*", "tsan");

namespace weft {
namespace {

struct Loaded {
  ProgramPlan plan;
  std::unique_ptr<CpuProgram> program;
};

Loaded load(const std::string& relative) {
  Loaded l;
  l.plan = lower_graph(test::load_graph_file(test::source_path(relative)), target_by_name("cpu"));
  l.program =
      build_cpu_program(l.plan, generate_source(l.plan, Backend::cpu), host_build_options());
  return l;
}

void fill(HostTensors& t, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (auto& x : t.inputs)
    for (float& v : x) v = u(rng);
}

std::vector<std::vector<float>> sequential(const Loaded& l, uint64_t seed) {
  HostTensors t(l.plan);
  fill(t, seed);
  run_sequential(*l.program, t, 1);
  return t.outputs;
}

// Programs with graph-defined kernels and library loops (no library matmul, whose BLAS threads
// ThreadSanitizer cannot see); the kernels loading the named tensor are the data-dependent ones
// of hybrid dispatch.
const std::vector<std::pair<std::string, std::string>>& programs() {
  static const std::vector<std::pair<std::string, std::string>> p = {
      {"tests/golden/lower/gqa_attention.fused.weft", "K"},
      {"tests/golden/mpk/fork.weft", "X"},
      {"examples/tiny_decoder_step.weft", "Kc"}};
  return p;
}

TEST(MpkRuntime, EveryWorkerCountAndDispatchMatchesSequentialExecution) {
  for (const auto& [path, reads] : programs()) {
    Loaded l = load(path);
    auto want = sequential(l, 11);
    double magnitude = 0;
    for (const auto& o : want)
      for (float v : o) magnitude = std::max(magnitude, static_cast<double>(std::abs(v)));
    ASSERT_GT(magnitude, 0) << path << ": trivial outputs";
    for (int workers : {1, 2, 7, 32})
      for (Dispatch d : {Dispatch::aot, Dispatch::jit, Dispatch::hybrid}) {
        MpkOptions o;
        o.assign = {workers, d};
        o.data_dependent = kernels_reading(l.plan, reads);
        ASSERT_FALSE(o.data_dependent.empty());
        DeviceGraph g = decode_task_graph(compile_task_graph(l.plan, o).blob);
        HostTensors t(l.plan);
        fill(t, 11);
        HostRunOptions ro;
        ro.schedulers = workers > 2 ? 2 : 1;
        ro.iterations = 3;
        ro.delay_seed = static_cast<uint64_t>(workers) * 3 + static_cast<uint64_t>(d) + 1;
        ro.max_delay_us = 50;
        HostRunResult r = run_on_host(l.plan, *l.program, g, t, ro);
        ASSERT_TRUE(r.ok) << path << " " << workers << " " << dispatch_name(d) << ": " << r.report;
        EXPECT_EQ(t.outputs, want)
            << path << " with " << workers << " workers, " << dispatch_name(d);
      }
  }
}

// The reference really is the program: block by block equals weft_main (its thread pool).
TEST(MpkSequential, MatchesTheProgramsOwnRun) {
  for (const auto& [path, reads] : programs()) {
    Loaded l = load(path);
    HostTensors t(l.plan);
    fill(t, 5);
    std::vector<std::vector<float>> inputs = t.inputs;
    run_sequential(*l.program, t, 1);
    EXPECT_EQ(t.outputs, l.program->run(inputs)) << path;
  }
}

TEST(MpkRuntime, WrongNeedTripsTheWatchdogWithItsReport) {
  Loaded l = load("tests/golden/mpk/fork.weft");
  MpkOptions o;
  o.assign = {2, Dispatch::aot};
  DeviceGraph g = decode_task_graph(compile_task_graph(l.plan, o).blob);
  ASSERT_GT(g.events.size(), 2u);
  g.events[2].need += 1;  // never fires
  HostTensors t(l.plan);
  HostRunOptions ro;
  ro.watchdog_s = 0.3;
  HostRunResult r = run_on_host(l.plan, *l.program, g, t, ro);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.report.find("watchdog"), std::string::npos) << r.report;
  EXPECT_NE(r.report.find("event e2"), std::string::npos) << r.report;
}

// The watchdog counts time without progress, not time spent waiting: with one worker and no JIT
// tasks, scheduler 0 waits for each iteration's end the whole iteration, and here an iteration
// (72 tasks, each slowed by random sleeps of up to 15 ms) lasts several watchdog periods while a
// task completes every few milliseconds. Before, that wait tripped the watchdog.
TEST(MpkRuntime, ALongIterationThatProgressesDoesNotTripTheWatchdog) {
  Loaded l = load("examples/tiny_decoder_step.weft");
  auto want = sequential(l, 3);
  MpkOptions o;
  o.assign = {1, Dispatch::aot};
  DeviceGraph g = decode_task_graph(compile_task_graph(l.plan, o).blob);
  HostTensors t(l.plan);
  fill(t, 3);
  HostRunOptions ro;
  ro.watchdog_s = 0.1;
  ro.iterations = 2;
  ro.delay_seed = 7;
  ro.max_delay_us = 15000;
  HostRunResult r = run_on_host(l.plan, *l.program, g, t, ro);
  ASSERT_TRUE(r.ok) << r.report;
  // The case is real only when an iteration outlasted the end wait's old limit (2 periods).
  ASSERT_GT(r.seconds / static_cast<double>(ro.iterations), 2 * ro.watchdog_s);
  EXPECT_EQ(t.outputs, want);
}

TEST(MpkRuntime, MisorderedWorkerListTripsTheWatchdog) {
  Loaded l = load("tests/golden/mpk/fork.weft");
  MpkOptions o;
  o.assign = {1, Dispatch::aot};  // one list: swapping its first two dependent tasks deadlocks
  DeviceGraph g = decode_task_graph(compile_task_graph(l.plan, o).blob);
  // The last task depends (through events) on the first.
  std::swap(g.list_tasks.front(), g.list_tasks.back());
  HostTensors t(l.plan);
  HostRunOptions ro;
  ro.watchdog_s = 0.3;
  HostRunResult r = run_on_host(l.plan, *l.program, g, t, ro);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.report.find("worker 0 waits for task"), std::string::npos) << r.report;
}

// Run by hand under ThreadSanitizer, which must report a data race (and halt):
//   build-tsan/weft_tests --gtest_filter=MpkRuntime.DISABLED_* --gtest_also_run_disabled_tests
// The library sum (operator o1, reading all of A) stops waiting for A's two producer blocks, as
// if its dependency were dropped; with 2 workers one producer runs on the other worker.
TEST(MpkRuntime, DISABLED_DroppedDependencyIsARaceUnderTsan) {
  Loaded l = load("tests/golden/mpk/fork.weft");
  MpkOptions o;
  o.assign = {2, Dispatch::aot};
  DeviceGraph g = decode_task_graph(compile_task_graph(l.plan, o).blob);
  for (TaskDesc& task : g.tasks)
    if (task.op == 1) task.wait = 0;  // begin
  HostTensors t(l.plan);
  fill(t, 3);
  HostRunOptions ro;
  ro.iterations = 20;
  EXPECT_TRUE(run_on_host(l.plan, *l.program, g, t, ro).ok);
}

TEST(MpkRuntime, DecodesTokenForTokenLikeSequentialExecution) {
  Loaded l = load("examples/tiny_decoder_step.weft");
  DecodeOptions d;
  d.tokens = 12;
  DecodeResult want = decode_sequential(l.plan, *l.program, d);
  ASSERT_EQ(want.tokens.size(), 13u);
  std::set<int> distinct(want.tokens.begin(), want.tokens.end());
  ASSERT_GT(distinct.size(), 2u) << "the decoded sequence is trivial";
  for (int workers : {1, 2, 7, 32})
    for (Dispatch dispatch : {Dispatch::aot, Dispatch::jit, Dispatch::hybrid}) {
      MpkOptions o;
      o.assign = {workers, dispatch};
      o.data_dependent = kernels_reading(l.plan, "Kc");
      DeviceGraph g = decode_task_graph(compile_task_graph(l.plan, o).blob);
      HostRunOptions ro;
      ro.schedulers = 2;
      ro.delay_seed = static_cast<uint64_t>(workers) + 100;
      ro.max_delay_us = 30;
      DecodeResult got = decode_on_host(l.plan, *l.program, g, d, ro);
      ASSERT_TRUE(got.run.ok) << got.run.report;
      EXPECT_EQ(got.tokens, want.tokens) << workers << " workers, " << dispatch_name(dispatch);
      EXPECT_EQ(got.logits, want.logits) << workers << " workers, " << dispatch_name(dispatch);
    }
}

// The trace: one span per task and iteration, on a worker, each starting after the tasks that
// trigger its event ended; its Chrome JSON has one complete event per span.
TEST(MpkTrace, HostRunRecordsOneSpanPerTaskRun) {
  Loaded l = load("examples/tiny_decoder_step.weft");
  MpkOptions o;
  o.assign = {3, Dispatch::hybrid};
  o.data_dependent = kernels_reading(l.plan, "Kc");
  MpkCompiled c = compile_task_graph(l.plan, o);
  DeviceGraph g = decode_task_graph(c.blob);
  HostTensors t(l.plan);
  fill(t, 2);
  HostRunOptions ro;
  ro.iterations = 2;
  ro.trace = true;
  HostRunResult r = run_on_host(l.plan, *l.program, g, t, ro);
  ASSERT_TRUE(r.ok) << r.report;
  const size_t n = g.tasks.size();
  ASSERT_EQ(r.trace.size(), 2 * n);
  for (size_t i = 0; i < r.trace.size(); ++i) {
    EXPECT_EQ(r.trace[i].task, i % n);
    EXPECT_LT(r.trace[i].worker, 3u);
    EXPECT_LE(r.trace[i].start, r.trace[i].end);
  }
  const auto succ = task_successors(c.graph);
  for (size_t k = 0; k < 2; ++k)
    for (size_t u = 0; u < n; ++u)
      for (int v : succ[u]) EXPECT_LE(r.trace[k * n + u].end, r.trace[k * n + v].start);
  const nlohmann::json doc = nlohmann::json::parse(chrome_trace_json(g, r.trace, "decoder"));
  std::vector<int> runs(n, 0);
  for (const auto& e : doc.at("traceEvents"))
    if (e.at("ph") == "X") {
      ++runs[e.at("args").at("task").get<size_t>()];
      EXPECT_GE(e.at("dur").get<double>(), 0.0);
    }
  EXPECT_EQ(runs, std::vector<int>(n, 2));
}

TEST(MpkTrace, CliWritesAParsableTraceWithOneSpanPerTaskRun) {
  const std::string file =
      testing::TempDir() + "/weft_mpk_trace_" + std::to_string(getpid()) + ".json";
  auto [rc, out] =
      test::run_weft(fmt::format("mpk run {} --workers 2 --tokens 3 --trace '{}'",
                                 test::source_path("tests/golden/mpk/fork.weft"), file));
  ASSERT_EQ(rc, 0) << out;
  const nlohmann::json doc = nlohmann::json::parse(test::read_text(file));
  std::map<int, int> runs;
  for (const auto& e : doc.at("traceEvents"))
    if (e.at("ph") == "X") ++runs[e.at("args").at("task").get<int>()];
  ASSERT_EQ(runs.size(), 9u) << out;  // fork.weft: 9 tasks
  for (const auto& [task, count] : runs) EXPECT_EQ(count, 3) << "task " << task;
  std::remove(file.c_str());
}

// The Qwen3-shaped step (examples/qwen3_tiny_decode_step.weft: QK-norm, RoPE from the hooks'
// COS/SIN, grouped-query split-KV attention, the tied embedding): a prompt, then greedy tokens.
TEST(MpkRuntime, DecodesQwen3TinyTokenForTokenLikeSequentialExecution) {
  Loaded l = load("examples/qwen3_tiny_decode_step.weft");
  DecodeOptions d;
  d.tokens = 6;
  d.prompt = {5, 17};
  d.normal_std = 0.1;  // at 0.02 this shallow random model keeps predicting its input token
  d.declared = {{"Wq0", DType::bf16}};
  DecodeResult want = decode_sequential(l.plan, *l.program, d);
  ASSERT_EQ(want.tokens.size(), 7u);
  EXPECT_EQ(want.tokens[0], 5);
  EXPECT_EQ(want.tokens[1], 17);
  std::set<int> distinct(want.tokens.begin(), want.tokens.end());
  ASSERT_GT(distinct.size(), 3u) << "the decoded sequence is trivial";
  ASSERT_NE(want.logits.front(), want.logits.back());
  for (int workers : {1, 2, 7})
    for (Dispatch dispatch : {Dispatch::aot, Dispatch::jit, Dispatch::hybrid}) {
      MpkOptions o;
      o.assign = {workers, dispatch};
      o.data_dependent = kernels_reading(l.plan, "Kc");
      ASSERT_EQ(o.data_dependent.size(), 2u);  // one attention kernel per layer
      DeviceGraph g = decode_task_graph(compile_task_graph(l.plan, o).blob);
      HostRunOptions ro;
      ro.schedulers = 2;
      ro.delay_seed = static_cast<uint64_t>(workers) + 200;
      ro.max_delay_us = 20;
      DecodeResult got = decode_on_host(l.plan, *l.program, g, d, ro);
      ASSERT_TRUE(got.run.ok) << got.run.report;
      EXPECT_EQ(got.tokens, want.tokens) << workers << " workers, " << dispatch_name(dispatch);
      EXPECT_EQ(got.logits, want.logits) << workers << " workers, " << dispatch_name(dispatch);
    }
}

TEST(MpkRuntime, DecodeRoundsDeclaredBf16WeightsAndChecksTheInterface) {
  Loaded l = load("examples/qwen3_tiny_decode_step.weft");
  DecodeOptions d;
  d.tokens = 1;
  d.keep_weights = true;
  d.declared = {{"Wq0", DType::bf16}};
  DecodeResult r = decode_sequential(l.plan, *l.program, d);
  bool rounded = false, other_unrounded = false;
  for (const NamedValues& w : r.weights)
    for (float v : w.values) {
      const bool bf16 = round_to_dtype(v, DType::bf16) == v;
      if (w.name == "Wq0") rounded = bf16;
      if (w.name == "Wk0" && !bf16) other_unrounded = true;
      if (w.name == "Wq0" && !bf16) FAIL() << "Wq0 holds " << v << ", not a bf16 value";
    }
  EXPECT_TRUE(rounded);
  EXPECT_TRUE(other_unrounded);  // not declared: full f32 draws
  d.tokens = 65;                 // the cache holds 64
  EXPECT_THROW((void)decode_sequential(l.plan, *l.program, d), UserError);
  d.tokens = 2;
  d.prompt = {4096};  // outside the vocabulary
  EXPECT_THROW((void)decode_sequential(l.plan, *l.program, d), UserError);
}

}  // namespace
}  // namespace weft
