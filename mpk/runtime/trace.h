// Per-task spans as a Chrome trace (the JSON trace-event format Perfetto and chrome://tracing
// open): one complete event per executed task, one track per worker.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mpk/encode.h"
#include "mpk/runtime/runtime_proto.h"

namespace weft {

// `spans` as recorded by the protocol (index (k - 1) * tasks + t; spans never filled, as after
// a watchdog trip, have end 0 and are left out). Times are relative to the earliest start, in
// microseconds; each event is named after its task and carries its op, kernel, block and
// iteration.
std::string chrome_trace_json(const DeviceGraph& graph, const std::vector<TaskSpan>& spans,
                              const std::string& name);

// One launch of a decode loop on the device (mpk/runtime/megakernel_program.h): its spans as
// recorded (index (iteration - 1) * tasks + task) and the decode step its first iteration ran,
// counted from 0 over the whole decode: span i belongs to step first_step + i / tasks.
struct LaunchTrace {
  int64_t first_step = 0;
  std::vector<TaskSpan> spans;
};

// The launches of one graph in one trace. Their spans share a clock (steady_clock in emulation,
// %globaltimer on a GPU, both absolute), so times are relative to the earliest start of all and
// launches follow one another with the host's time between them. Each task's event is named
// after its kernel (`kernel_names`: one per op of the graph, TaskGraph::ops' kernel) and carries
// launch, step, task, block; above the workers' tracks, a "launches" and a "steps" track hold
// one slice per launch and per step, from its first task's start to its last task's end.
std::string chrome_trace_json(const DeviceGraph& graph, const std::vector<LaunchTrace>& launches,
                              const std::vector<std::string>& kernel_names,
                              const std::string& name);

}  // namespace weft
