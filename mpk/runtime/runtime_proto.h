// The runtime protocol on the host side: the device-compatible protocol (mpk/device/protocol.cuh)
// over a decoded graph, with its state in host vectors, and its failure report formatted as text.
// Every platform (host threads, the persistent GPU kernel and its host emulation) runs the same
// weft_mpk::Protocol; this is how host code drives and reads it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mpk/device/protocol.cuh"
#include "mpk/encode.h"

namespace weft {

using ProtocolReport = weft_mpk::Report;
using TaskSpan = weft_mpk::TaskSpan;

// The arrays of `g` (which must outlive the view).
weft_mpk::GraphView view_of(const DeviceGraph& g);

// The report as one line, e.g. "watchdog: worker 0 waits for task t3 (op o1, block [1,0,0]) of
// iteration 2: event e2 counter 2, need 2 x 2 = 4"; empty for kReportNone.
std::string format_report(const ProtocolReport& r);

// The protocol's zeroed state, report and (optional) trace for one run of `g`.
struct ProtocolMemory {
  ProtocolMemory(const DeviceGraph& g, uint32_t schedulers, uint64_t iterations, bool trace);
  weft_mpk::GraphView graph;
  weft_mpk::Layout layout;
  std::vector<uint64_t> state;
  ProtocolReport report{};
  std::vector<TaskSpan> trace;  // (iteration - 1) * tasks + task; empty when not traced
};

}  // namespace weft
