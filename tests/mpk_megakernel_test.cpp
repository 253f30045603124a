// The persistent kernel (mpk/runtime/megakernel.h) without a GPU: hand-written task bodies that
// follow the task-body contract check, from inside every task, that each task it depends on (its
// ancestors through events) has finished this iteration, on every one of its worker's threads,
// that only compute threads enter them, from their command loop, and count their runs; the unit
// runs in host emulation (every CTA's threads at once) and compiles with nvcc for sm_80 and
// sm_90a. The co-residency rule is checked with fake device numbers, and on a GPU with a launch
// that cannot fit; the launch's set-up runs once per loaded kernel. On a GPU the same checks run
// on the device (skipped here).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "core/target.h"
#include "lower/pipeline.h"
#include "mpk/device/launch_check.cuh"
#include "mpk/passes/pipeline.h"
#include "mpk/runtime/megakernel.h"
#include "mpk/runtime/megakernel_run.h"
#include "runtime/cuda_runtime.h"
#include "testing/decode_demo.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit", "loads_generated");
WEFT_TEST_TIERS_OF("MpkMegakernel.GpuRefusesWhatCannotBeCoResident", "gpu");
WEFT_TEST_TIERS_OF("MpkMegakernelGpu.*", "gpu");

#ifdef WEFT_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace weft {
namespace {

constexpr int kThreads = 64;

// The contract's three definitions, for bodies that only check ordering. inputs[0]: int32 map,
// kernel k's tasks at map[map[3k] + bx + gx (by + gy bz)] with gx = map[3k+1], gy = map[3k+2];
// inputs[1]: int32 CSR of each task's non-empty ancestors; outputs[0]: uint32 marks, one per task
// and thread (each thread counts its runs of the task in its own cell); outputs[1]: uint32
// {violations, calls, wrong entries}. Thread 0 compares every ancestor's marks, written by all
// threads of other CTAs with plain stores, with its own count + 1: only the protocol orders them.
// A wrong entry is a thread of the protocol warp (or, in emulation, any thread not in a compute
// thread's command loop) entering a body: counted, and the body left at once.
const char* kCheckingBodies = R"(
constexpr int weft_mpk_worker_threads = 64;
constexpr int weft_mpk_body_smem_bytes = 256;
#if defined(WEFT_HOST_EMULATION)
static inline void weft_test_add(uint32_t* p, uint32_t v) { __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
#else
__device__ __forceinline__ void weft_test_add(uint32_t* p, uint32_t v) { atomicAdd(p, v); }
#endif
WEFT_DEV void weft_mpk_task(uint32_t kernel, int bx, int by, int bz, unsigned char* smem,
                            void* const* inputs, void* const* outputs, unsigned char* workspace) {
  const int* map = static_cast<const int*>(inputs[0]);
  const int* anc = static_cast<const int*>(inputs[1]);
  uint32_t* marks = static_cast<uint32_t*>(outputs[0]);
  uint32_t* stats = static_cast<uint32_t*>(outputs[1]);
  const int tid = weft_tid();
#if defined(WEFT_HOST_EMULATION)
  const bool from_command_loop = weft_emu.role == weft_emu_role_body_loop;
#else
  const bool from_command_loop = true;
#endif
  if (tid >= weft_mpk_worker_threads || !from_command_loop) {
    weft_test_add(&stats[2], 1);
    return;
  }
  const int k = static_cast<int>(kernel);
  const int t = map[map[3 * k] + bx + map[3 * k + 1] * (by + map[3 * k + 2] * bz)];
  const uint32_t mine = marks[t * weft_mpk_worker_threads + tid];
  if (tid == 0) {
    for (int i = anc[t]; i < anc[t + 1]; ++i)
      for (int j = 0; j < weft_mpk_worker_threads; ++j)
        if (marks[anc[i] * weft_mpk_worker_threads + j] != mine + 1) weft_test_add(&stats[0], 1);
    smem[0] = static_cast<unsigned char>(t);
    workspace[t] = smem[0];
  }
  marks[t * weft_mpk_worker_threads + tid] = mine + 1;
  weft_test_add(&stats[1], 1);
}
)";

struct Program {
  ProgramPlan plan;
  std::string reads;  // the data-dependent kernels load tensors named so
};

Program lowered(const std::string& path, const std::string& reads) {
  return {lower_graph(test::load_graph_file(test::source_path(path)), target_by_name("cpu")),
          reads};
}

const std::vector<Program>& programs() {
  static const std::vector<Program> p = {
      lowered("tests/golden/lower/gqa_attention.fused.weft", "K"),
      lowered("tests/golden/mpk/fork.weft", "X"), lowered("examples/tiny_decoder_step.weft", "Kc")};
  return p;
}

MpkCompiled compiled(const Program& p, int workers, Dispatch d) {
  MpkOptions o;
  o.assign = {workers, d};
  o.data_dependent = kernels_reading(p.plan, p.reads);
  return compile_task_graph(p.plan, o);
}

// The bodies' tables for a compiled graph, and the buffers they write.
struct Tables {
  std::vector<int> map, ancestors;
  std::vector<uint32_t> marks, stats = {0, 0, 0};
  std::vector<unsigned char> workspace;
  int bodies = 0;  // non-empty tasks
};

Tables tables(const TaskGraph& g) {
  Tables t;
  const int n = static_cast<int>(g.tasks.size());
  int kernels = 0;
  for (const Operator& op : g.ops) kernels = std::max(kernels, op.kernel_index + 1);
  t.map.assign(3 * kernels, 0);
  for (const Operator& op : g.ops) {
    t.map[3 * op.kernel_index] = static_cast<int>(t.map.size());
    t.map[3 * op.kernel_index + 1] = static_cast<int>(op.grid[0]);
    t.map[3 * op.kernel_index + 2] = static_cast<int>(op.grid[1]);
    t.map.resize(t.map.size() + (op.library ? 1 : op.grid[0] * op.grid[1] * op.grid[2]), -1);
  }
  for (int i = 0; i < n; ++i) {
    const Task& task = g.tasks[i];
    if (task.op == kEmptyTask) continue;
    ++t.bodies;
    const Operator& op = g.ops[task.op];
    t.map[t.map[3 * op.kernel_index] + task.bid[0] +
          op.grid[0] * (task.bid[1] + op.grid[1] * task.bid[2])] = i;
  }
  const auto reach = task_reachability(g);
  t.ancestors.assign(n + 1, 0);
  std::vector<int> ids;
  for (int v = 0; v < n; ++v) {
    t.ancestors[v] = static_cast<int>(ids.size());
    for (int u = 0; u < n; ++u)
      if (g.tasks[u].op != kEmptyTask && reaches(reach, u, v)) ids.push_back(u);
  }
  t.ancestors[n] = static_cast<int>(ids.size());
  for (int& x : t.ancestors) x += n + 1;
  t.ancestors.insert(t.ancestors.end(), ids.begin(), ids.end());
  t.marks.assign(static_cast<size_t>(n) * kThreads, 0);
  t.workspace.assign(n, 0);
  return t;
}

// A (mutated) decoded graph encoded again: the blob layout of mpk/encode.h.
std::vector<uint8_t> encode(const DeviceGraph& g) {
  std::vector<uint8_t> b;
  auto put = [&](const void* p, size_t n) {
    b.insert(b.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
  };
  put("WEFTMPK1", 8);
  const uint32_t header[6] = {
      static_cast<uint32_t>(g.ops.size()),        static_cast<uint32_t>(g.tasks.size()),
      static_cast<uint32_t>(g.events.size()),     g.workers,
      static_cast<uint32_t>(g.list_tasks.size()), 0};
  put(header, sizeof header);
  put(g.ops.data(), g.ops.size() * sizeof(OpDesc));
  put(g.tasks.data(), g.tasks.size() * sizeof(TaskDesc));
  put(g.events.data(), g.events.size() * sizeof(EventDesc));
  put(g.list_offsets.data(), g.list_offsets.size() * 4);
  put(g.list_tasks.data(), g.list_tasks.size() * 4);
  const uint64_t h = blob_hash(b.data(), b.size());
  put(&h, 8);
  return b;
}

MegakernelRun run(const LoadedMegakernel& k, const MpkCompiled& c, Tables& t, uint64_t iterations,
                  bool trace) {
  return k.run(c.blob, {t.map.data(), t.ancestors.data()}, {t.marks.data(), t.stats.data()},
               t.workspace.data(), iterations, trace);
}

TEST(MpkMegakernel, EmulatedKernelRunsEveryTaskInDependencyOrder) {
  for (const Program& p : programs())
    for (int workers : {1, 2, 4}) {
      for (Dispatch d : {Dispatch::aot, Dispatch::jit, Dispatch::hybrid}) {
        SCOPED_TRACE(fmt::format("{}, {} workers, {}", p.plan.name, workers, dispatch_name(d)));
        MpkCompiled c = compiled(p, workers, d);
        const DeviceGraph g = decode_task_graph(c.blob);
        MegakernelOptions mo;
        mo.schedulers = workers > 2 ? 2 : 1;
        auto kernel = build_megakernel(emit_megakernel_unit(kCheckingBodies, g, mo), true);
        for (uint64_t iterations : {1, 3}) {
          Tables t = tables(c.graph);
          ASSERT_GT(t.bodies, 1);
          MegakernelRun r = run(*kernel, c, t, iterations, true);
          ASSERT_TRUE(r.ok) << r.report;
          EXPECT_EQ(t.stats[0], 0u) << "ancestors not finished when a task ran";
          EXPECT_EQ(t.stats[1], iterations * t.bodies * kThreads);
          EXPECT_EQ(t.stats[2], 0u) << "a body entered by a protocol thread";
          for (size_t i = 0; i < c.graph.tasks.size(); ++i)
            for (int j = 0; j < kThreads; ++j)
              ASSERT_EQ(t.marks[i * kThreads + j],
                        c.graph.tasks[i].op == kEmptyTask ? 0 : iterations)
                  << "task " << i << " thread " << j;
          // One span per task and iteration, on a worker; each after its event's triggers.
          ASSERT_EQ(r.trace.size(), iterations * c.graph.tasks.size());
          for (size_t i = 0; i < r.trace.size(); ++i) {
            const TaskSpan& s = r.trace[i];
            ASSERT_EQ(s.task, i % c.graph.tasks.size());
            ASSERT_LT(s.worker, static_cast<uint32_t>(workers));
            ASSERT_LE(s.start, s.end);
          }
          const auto succ = task_successors(c.graph);
          for (size_t u = 0; u < succ.size(); ++u)
            for (int v : succ[u]) EXPECT_LE(r.trace[u].end, r.trace[v].start) << u << " -> " << v;
        }
      }
    }
}

TEST(MpkMegakernel, WrongNeedComesBackAsTheWatchdogReport) {
  const Program& p = programs()[1];
  MpkCompiled c = compiled(p, 2, Dispatch::aot);  // AOT: a worker waits on e2 itself
  DeviceGraph g = decode_task_graph(c.blob);
  ASSERT_GT(g.events.size(), 2u);
  MegakernelOptions mo;
  mo.watchdog_s = 0.3;
  auto kernel = build_megakernel(emit_megakernel_unit(kCheckingBodies, g, mo), true);
  g.events[2].need += 1;  // never fires
  c.blob = encode(g);
  Tables t = tables(c.graph);
  MegakernelRun r = run(*kernel, c, t, 2, false);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.report.find("watchdog: worker"), std::string::npos) << r.report;
  EXPECT_NE(r.report.find("event e2"), std::string::npos) << r.report;
  EXPECT_EQ(t.stats[0], 0u);
  // A blob of another graph shape (another worker count) is refused before launching.
  MpkCompiled other = compiled(p, 3, Dispatch::aot);
  Tables u = tables(other.graph);
  try {
    run(*kernel, other, u, 1, false);
    FAIL() << "ran a blob the unit was not emitted for";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("3 workers"), std::string::npos) << e.what();
  }
}

// The bodies' check can fail: one worker whose list starts with a task that no longer waits for
// its event (a dropped dependency, as if the compiler had lost it) runs it before its ancestors.
TEST(MpkMegakernel, DroppedDependencyIsSeenByTheCheckingBodies) {
  MpkCompiled c = compiled(programs()[2], 1, Dispatch::aot);
  DeviceGraph g = decode_task_graph(c.blob);
  ASSERT_EQ(encode(g), c.blob);  // the test's encoder is the compiler's
  auto kernel = build_megakernel(emit_megakernel_unit(kCheckingBodies, g, {}), true);
  Tables t = tables(c.graph);
  ASSERT_EQ(run(*kernel, c, t, 1, false).ok, true);
  ASSERT_EQ(t.stats[0], 0u);
  auto& list = g.list_tasks;
  auto last =
      std::find_if(list.rbegin(), list.rend(), [&](uint32_t x) { return g.tasks[x].op != kNoOp; });
  ASSERT_NE(last, list.rend());
  const uint32_t moved = *last;
  list.erase(std::next(last).base());
  list.insert(list.begin(), moved);
  g.tasks[moved].wait = 0;  // begin
  c.blob = encode(g);
  Tables u = tables(c.graph);
  MegakernelRun r = run(*kernel, c, u, 1, false);
  ASSERT_TRUE(r.ok) << r.report;
  EXPECT_GT(u.stats[0], 0u) << "task t" << moved << " ran before its ancestors unnoticed";
}

// The check fails on the structure the protocol warp replaced: the protocol lane running each
// body itself (from inside the protocol) while the compute threads run it from their loop, which
// on a GPU puts a divergent warp through the bodies' .aligned instructions.
TEST(MpkMegakernel, AProtocolThreadEnteringABodyIsSeen) {
  MpkCompiled c = compiled(programs()[1], 2, Dispatch::aot);
  std::string unit = emit_megakernel_unit(kCheckingBodies, decode_task_graph(c.blob), {});
  const std::string handoffs = "    weft_mpk_cta_handoff();\n    weft_mpk_cta_handoff();\n";
  const size_t at = unit.find(handoffs);
  ASSERT_NE(at, std::string::npos) << "run_task's two handoffs";
  unit.replace(at, handoffs.size(),
               "    weft_mpk_cta_handoff();\n"
               "    weft_mpk_task(c->kernel, c->bx, c->by, c->bz, smem + kWeftMpkCommandBytes, "
               "args->inputs, args->outputs, args->workspace);\n"
               "    weft_mpk_cta_handoff();\n");
  auto kernel = build_megakernel(unit, true);
  Tables t = tables(c.graph);
  MegakernelRun r = run(*kernel, c, t, 2, false);
  ASSERT_TRUE(r.ok) << r.report;
  EXPECT_EQ(t.stats[2], 2u * t.bodies) << "each task's body entered by its protocol lane";
}

// The launch's set-up (co-residency check; on a GPU also the device queries, the shared-memory
// limit and the occupancy) runs once per loaded kernel, not per launch: timed launches time the
// launch alone.
TEST(MpkMegakernel, LaunchSetUpRunsOncePerLoadedKernel) {
  MpkCompiled c = compiled(programs()[1], 2, Dispatch::hybrid);
  auto kernel =
      build_megakernel(emit_megakernel_unit(kCheckingBodies, decode_task_graph(c.blob), {}), true);
  EXPECT_EQ(kernel->setup_count(), 0u);
  Tables t = tables(c.graph);
  ASSERT_TRUE(run(*kernel, c, t, 1, false).ok);
  EXPECT_EQ(kernel->setup_count(), 1u);
  (void)kernel->time(c.blob, {t.map.data(), t.ancestors.data()}, {t.marks.data(), t.stats.data()},
                     t.workspace.data(), 1, 2, 5);
  auto launch = kernel->prepare(c.blob, {t.map.data(), t.ancestors.data()},
                                {t.marks.data(), t.stats.data()}, t.workspace.data());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(launch->run(2).ok);
  EXPECT_EQ(kernel->setup_count(), 1u) << "after 1 run, 7 timed launches and 3 prepared ones";
  EXPECT_EQ(t.stats[0], 0u);
  EXPECT_EQ(t.stats[2], 0u);
}

TEST(MpkMegakernel, CoResidencyRuleRefusesWhatCannotFit) {
  char msg[512];
  EXPECT_EQ(weft_mpk_check_co_residency(1, 1, 132, 132, 128, 1024, msg, sizeof msg), 0);
  EXPECT_EQ(weft_mpk_check_co_residency(1, 2, 132, 264, 128, 1024, msg, sizeof msg), 0);
  ASSERT_EQ(weft_mpk_check_co_residency(1, 1, 132, 133, 256, 200000, msg, sizeof msg), 1);
  const std::string m = msg;
  for (const char* part :
       {"133 CTAs", "256 threads", "200000 bytes", "1 fit per SM", "132 SMs", "= 132"})
    EXPECT_NE(m.find(part), std::string::npos) << part << " in: " << m;
  ASSERT_EQ(weft_mpk_check_co_residency(0, 8, 132, 4, 64, 0, msg, sizeof msg), 1);
  EXPECT_NE(std::string(msg).find("cooperative launch"), std::string::npos) << msg;
  // Zero occupancy (a body too large for the SM) refuses any launch.
  EXPECT_EQ(weft_mpk_check_co_residency(1, 0, 132, 1, 1024, 300000, msg, sizeof msg), 1);
}

std::string nvcc_or_empty() {
  try {
    return find_nvcc();
  } catch (const UserError&) {
    return "";
  }
}

TEST(MpkMegakernel, UnitCompilesWithNvccForSm80AndSm90a) {
  const std::string nvcc = nvcc_or_empty();
  if (nvcc.empty()) GTEST_SKIP() << "nvcc not found";
  MpkCompiled c = compiled(programs()[2], 4, Dispatch::hybrid);
  MegakernelOptions mo;
  mo.schedulers = 2;
  const std::string dir = testing::TempDir() + "/weft_megakernel_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string cu = dir + "/megakernel.cu", log = cu + ".log";
  std::ofstream(cu) << emit_megakernel_unit(kCheckingBodies, decode_task_graph(c.blob), mo);
  const std::string cmd = fmt::format(
      "'{}' -std=c++17 -c -o /dev/null -t 2 -gencode arch=compute_80,code=sm_80 "
      "-gencode arch=compute_90a,code=sm_90a -Werror all-warnings "
      "-Xcompiler -Wall,-Wextra,-Werror '{}' > '{}' 2>&1",
      nvcc, cu, log);
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd << "\n" << test::read_text(log).substr(0, 6000);
}

// On a GPU: more worker CTAs than can be resident (992 compute threads, the protocol warp and
// 200 KB of shared memory each leave one per SM; 1000 workers exceed any device's SMs) are
// refused, never launched.
TEST(MpkMegakernel, GpuRefusesWhatCannotBeCoResident) {
  if (!cuda_runtime_built()) GTEST_SKIP() << "weft was built without the CUDA toolkit";
  if (std::string why = cuda_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  MpkCompiled c = compiled(programs()[1], 1000, Dispatch::aot);
  std::string bodies = kCheckingBodies;
  bodies.replace(bodies.find("= 64;"), 5, "= 992;");
  bodies.replace(bodies.find("= 256;"), 6, "= 200000;");
  const CudaDevice& dev = require_cuda_device();
  auto kernel = build_megakernel(
      emit_megakernel_unit(bodies, decode_task_graph(c.blob), MegakernelOptions{}), false,
      fmt::format("sm_{}{}{}", dev.major, dev.minor, dev.major == 9 ? "a" : ""));
  Tables t = tables(c.graph);
  try {
    run(*kernel, c, t, 1, false);
    FAIL() << "launched a grid that cannot be co-resident";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("refused"), std::string::npos) << e.what();
  }
}

#ifdef WEFT_HAVE_CUDA
// The tables and buffers of a Tables on the device, copied back by fetch.
struct DeviceTables {
  std::vector<void*> in, out;
  void* workspace = nullptr;
  void* put(const void* p, size_t bytes) {
    void* d = nullptr;
    EXPECT_EQ(cudaMalloc(&d, bytes), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(d, p, bytes, cudaMemcpyHostToDevice), cudaSuccess);
    return d;
  }
  explicit DeviceTables(const Tables& t) {
    in = {put(t.map.data(), t.map.size() * 4), put(t.ancestors.data(), t.ancestors.size() * 4)};
    out = {put(t.marks.data(), t.marks.size() * 4), put(t.stats.data(), t.stats.size() * 4)};
    workspace = put(t.workspace.data(), t.workspace.size());
  }
  void fetch(Tables& t) const {
    EXPECT_EQ(cudaMemcpy(t.marks.data(), out[0], t.marks.size() * 4, cudaMemcpyDeviceToHost),
              cudaSuccess);
    EXPECT_EQ(cudaMemcpy(t.stats.data(), out[1], t.stats.size() * 4, cudaMemcpyDeviceToHost),
              cudaSuccess);
  }
  ~DeviceTables() {
    for (void* p : in) cudaFree(p);
    for (void* p : out) cudaFree(p);
    cudaFree(workspace);
  }
};
#endif

// On a GPU: the checking bodies run every task in dependency order on every compute thread and
// on no thread of the protocol warp, and the launch's set-up runs once across timed launches.
TEST(MpkMegakernelGpu, BodiesRunOnComputeThreadsInDependencyOrder) {
  if (!cuda_runtime_built()) GTEST_SKIP() << "weft was built without the CUDA toolkit";
  if (std::string why = cuda_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
#ifdef WEFT_HAVE_CUDA
  const CudaDevice& dev = require_cuda_device();
  const std::string arch =
      fmt::format("sm_{}{}{}", dev.major, dev.minor, dev.major == 9 ? "a" : "");
  for (const Program& p : programs())
    for (Dispatch d : {Dispatch::aot, Dispatch::hybrid}) {
      SCOPED_TRACE(fmt::format("{}, {}", p.plan.name, dispatch_name(d)));
      MpkCompiled c = compiled(p, 4, d);
      MegakernelOptions mo;
      mo.schedulers = 2;
      auto kernel = build_megakernel(
          emit_megakernel_unit(kCheckingBodies, decode_task_graph(c.blob), mo), false, arch);
      Tables t = tables(c.graph);
      const uint64_t iterations = 3;
      {
        DeviceTables dt(t);
        MegakernelRun r = kernel->run(c.blob, dt.in, dt.out, dt.workspace, iterations, false);
        ASSERT_TRUE(r.ok) << r.report;
        dt.fetch(t);
      }
      EXPECT_EQ(t.stats[0], 0u) << "ancestors not finished when a task ran";
      EXPECT_EQ(t.stats[1], iterations * t.bodies * kThreads);
      EXPECT_EQ(t.stats[2], 0u) << "a body entered by a thread of the protocol warp";
      for (size_t i = 0; i < c.graph.tasks.size(); ++i)
        for (int j = 0; j < kThreads; ++j)
          ASSERT_EQ(t.marks[i * kThreads + j], c.graph.tasks[i].op == kEmptyTask ? 0 : iterations)
              << "task " << i << " thread " << j;
      Tables u = tables(c.graph);
      DeviceTables du(u);
      (void)kernel->time(c.blob, du.in, du.out, du.workspace, 1, 2, 5);
      EXPECT_EQ(kernel->setup_count(), 1u) << "after a run and 7 timed launches";
    }
#endif
}

}  // namespace
}  // namespace weft
