// The empty-task chain's graph, its bodies and the hop figures of its trace.
#include "mpk/bench/hop_chain.h"

#include <fmt/format.h>

#include <numeric>

#include "core/error.h"
#include "mpk/device/megakernel_abi.cuh"
#include "mpk/runtime/megakernel.h"
#include "mpk/runtime/megakernel_run.h"

namespace weft {

DeviceGraph empty_chain_graph(uint32_t tasks, uint32_t workers, bool jit) {
  if (tasks < 2)
    throw UserError(fmt::format("an empty-task chain needs 2 tasks or more, not {}", tasks));
  if (workers < 1) throw UserError("an empty-task chain needs a worker");
  if (tasks > 0xfffffff0u) throw UserError(fmt::format("{} tasks is too many", tasks));
  DeviceGraph g;
  g.workers = workers;
  // Event of task i's wait: 0 (begin) for i = 0, else 1 + i; task i triggers 2 + i, the last end.
  auto wait_of = [](uint32_t i) { return i == 0 ? weft_mpk::kBeginEvent : 1 + i; };
  g.events.push_back(EventDesc{1, 0, 0, 0});  // begin: launches task 0
  g.events.push_back(EventDesc{1, 1, 0, 2});  // end: launches nothing
  for (uint32_t i = 1; i < tasks; ++i) g.events.push_back(EventDesc{1, i, i, 1});
  for (uint32_t i = 0; i < tasks; ++i)
    g.tasks.push_back(TaskDesc{kNoOp, wait_of(i), i + 1 == tasks ? weft_mpk::kEndEvent : 2 + i, 0,
                               0, 0, jit ? kTaskJit : uint16_t{0}});
  g.list_offsets.push_back(0);
  for (uint32_t w = 0; w < workers; ++w) {
    if (!jit)
      for (uint32_t i = w; i < tasks; i += workers) g.list_tasks.push_back(i);
    g.list_offsets.push_back(static_cast<uint32_t>(g.list_tasks.size()));
  }
  return g;
}

std::string empty_task_bodies(int worker_threads) {
  WEFT_CHECK(worker_threads >= 32 && worker_threads % 32 == 0 &&
                 worker_threads + kWeftMpkProtocolThreads <= 1024,
             "{} worker threads", worker_threads);
  return fmt::format(
      "constexpr int weft_mpk_worker_threads = {};\n"
      "constexpr int weft_mpk_body_smem_bytes = 0;\n"
      "WEFT_DEV void weft_mpk_task(uint32_t, int, int, int, unsigned char*, void* const*,\n"
      "                            void* const*, unsigned char*) {{}}\n",
      worker_threads);
}

HopFigures chain_hops(const std::vector<TaskSpan>& trace, uint32_t tasks, uint64_t iterations) {
  WEFT_CHECK(tasks >= 2 && trace.size() == tasks * iterations,
             "a trace of {} spans for {} tasks x {} iterations", trace.size(), tasks, iterations);
  std::vector<double> hops;
  for (uint64_t k = 0; k < iterations; ++k)
    for (uint32_t i = 0; i + 1 < tasks; ++i) {
      const TaskSpan& a = trace[k * tasks + i];
      const TaskSpan& b = trace[k * tasks + i + 1];
      WEFT_CHECK(a.task == i && b.task == i + 1 && b.start >= a.end,
                 "task {} of iteration {} started at {} before task {} ended at {}", i + 1, k + 1,
                 b.start, i, a.end);
      hops.push_back(static_cast<double>(b.start - a.end));
    }
  HopFigures f;
  f.hops = static_cast<int64_t>(hops.size());
  f.mean_ns = std::accumulate(hops.begin(), hops.end(), 0.0) / static_cast<double>(hops.size());
  const Timing t = summarize_times(std::move(hops));  // in ns here
  f.median_ns = t.median_s;
  f.min_ns = t.min_s;
  f.max_ns = t.max_s;
  return f;
}

HopBench bench_hops(const HopBenchOptions& o) {
  if (o.tasks < 3)
    throw UserError(fmt::format("the hop benchmark needs 3 tasks or more, not {}", o.tasks));
  if (o.reps < 1) throw UserError("the hop benchmark needs a repetition");
  const int most = 1024 - kWeftMpkProtocolThreads;
  if (o.worker_threads < 32 || o.worker_threads % 32 != 0 || o.worker_threads > most)
    throw UserError(fmt::format(
        "worker CTAs of {} threads; they need a multiple of 32 from 32 to {} (the protocol warp "
        "takes 32 more)",
        o.worker_threads, most));
  MegakernelOptions mo;
  mo.schedulers = o.schedulers;
  mo.watchdog_s = o.watchdog_s;
  auto build = [&](uint32_t tasks) {
    const DeviceGraph g = empty_chain_graph(tasks, o.workers, o.jit);
    return std::make_pair(
        encode_device_graph(g),
        build_megakernel(emit_megakernel_unit(empty_task_bodies(o.worker_threads), g, mo),
                         o.emulated, o.arch));
  };
  auto [chain_blob, chain] = build(o.tasks);
  auto [pair_blob, pair] = build(2);
  HopBench b;
  std::vector<TaskSpan> spans;
  for (int r = 0; r < o.reps; ++r) {
    MegakernelRun run = chain->run(chain_blob, {}, {}, nullptr, 1, true);
    if (!run.ok) throw UserError(fmt::format("the empty-task chain tripped: {}", run.report));
    spans.insert(spans.end(), run.trace.begin(), run.trace.end());
  }
  b.hops = chain_hops(spans, o.tasks, static_cast<uint64_t>(o.reps));
  b.chain = chain->time(chain_blob, {}, {}, nullptr, 1, 1, o.reps);
  b.pair = pair->time(pair_blob, {}, {}, nullptr, 1, 1, o.reps);
  b.launch_per_hop_s = (b.chain.median_s - b.pair.median_s) / static_cast<double>(o.tasks - 2);
  return b;
}

}  // namespace weft
