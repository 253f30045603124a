// Per-task spans as a Chrome trace (the JSON trace-event format Perfetto and chrome://tracing
// open): one complete event per executed task, one track per worker.
#pragma once

#include <string>
#include <vector>

#include "mpk/encode.h"
#include "mpk/runtime_proto.h"

namespace weft {

// `spans` as recorded by the protocol (index (k - 1) * tasks + t; spans never filled, as after
// a watchdog trip, have end 0 and are left out). Times are relative to the earliest start, in
// microseconds; each event is named after its task and carries its op, kernel, block and
// iteration.
std::string chrome_trace_json(const DeviceGraph& graph, const std::vector<TaskSpan>& spans,
                              const std::string& name);

}  // namespace weft
