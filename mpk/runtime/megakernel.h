// The persistent GPU kernel of a task graph as one CUDA unit: the CUDA prelude, the task bodies
// (text that defines weft_mpk_worker_threads, weft_mpk_body_smem_bytes and weft_mpk_task; see
// docs/mpk.md), the graph's constants, the protocol (mpk/device/protocol.cuh), the platform and
// the extern "C" entries of mpk/device/megakernel_abi.cuh. The same text compiles with nvcc and,
// with -DWEFT_HOST_EMULATION, as host C++ where every CTA is a group of threads.
#pragma once

#include <cstdint>
#include <string>

#include "mpk/encode.h"

namespace weft {

struct MegakernelOptions {
  uint32_t schedulers = 1;  // scheduler warps (one per warp of the trailing CTAs)
  double watchdog_s = 10;   // the longest any spin may wait before the kernel reports and traps
};

// `graph` fixes the workers (one CTA each), the event count and the queue sizes the unit is
// compiled for; the blob passed at launch must be this graph's (the same encode_task_graph).
std::string emit_megakernel_unit(const std::string& bodies, const DeviceGraph& graph,
                                 const MegakernelOptions& options);

}  // namespace weft
