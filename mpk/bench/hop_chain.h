// The empty-task chain: the persistent kernel's dependent-hop latency, measured with no task body
// in the way. N empty tasks, each waiting for the previous one's event, spread round-robin over
// the workers (every hop crosses CTAs) or dispatched just in time by the schedulers; the trace's
// spans give each hop (start of task i+1 minus end of task i).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mpk/encode.h"
#include "mpk/runtime/runtime_proto.h"
#include "runtime/timing.h"

namespace weft {

// The chain as decoded arrays: events begin (0), end (1) and one between each pair of tasks;
// task i waits for its predecessor's event and triggers the next (the last triggers end).
// aot: worker lists, task i on worker i % workers; jit: every task dispatched by a scheduler
// when its event fires. UserError for tasks < 2 or workers < 1.
DeviceGraph empty_chain_graph(uint32_t tasks, uint32_t workers, bool jit);

// Task bodies for a graph without operators (the unit's weft_mpk_task is never called).
std::string empty_task_bodies(int worker_threads = 128);

struct HopFigures {
  int64_t hops = 0;  // measured hops: (tasks - 1) per iteration
  double median_ns = 0, min_ns = 0, max_ns = 0, mean_ns = 0;
};

// The hops of a traced run of empty_chain_graph(tasks, ...) over `iterations` iterations:
// for each iteration and each i, start(i + 1) - end(i). InternalError when the trace does not
// hold every task of every iteration or a task started before its predecessor ended.
HopFigures chain_hops(const std::vector<TaskSpan>& trace, uint32_t tasks, uint64_t iterations);

struct HopBenchOptions {
  uint32_t tasks = 1000, workers = 132;  // workers: one CTA per SM (H100: 132)
  bool jit = false;                      // aot: worker lists; jit: scheduler dispatch
  uint32_t schedulers = 1;
  int worker_threads = 128;
  int reps = 5;          // traced launches
  bool emulated = true;  // host emulation (thread times, not GPU times) or the GPU
  std::string arch = "sm_90a";
  double watchdog_s = 10;
};

struct HopBench {
  HopFigures hops;              // from the traces of `reps` launches
  Timing chain, pair;           // untraced launches of the chain and of a 2-task chain
  double launch_per_hop_s = 0;  // (chain - pair) / (tasks - 2), medians: hops without the trace
};

// Builds the chain's persistent kernel and measures it. UserError as for build_megakernel and
// when a launch trips the watchdog or is refused.
HopBench bench_hops(const HopBenchOptions& options);

}  // namespace weft
