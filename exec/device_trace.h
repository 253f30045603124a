// A record of one run of the device executor at a binding (DeviceVm::trace): every buffer it
// allocated, every kernel it launched in order (a model kernel's argument struct as bytes, a
// µGraph unit's program and buffer pointers), the argument and result buffers, and the operators
// it could not run on the device. The pointers name buffers the trace keeps alive, so each one is
// one buffer's address: what a persistent kernel's plan is built from (driver/model_megakernel.h).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/ops.h"
#include "runtime/device.h"
#include "runtime/program.h"

namespace weft {

struct DeviceValue;

struct TracedLaunch {
  // A model kernel: its entry point ("weft_dk_map_launch") and argument struct; empty for a
  // µGraph.
  std::string kernel;
  std::vector<unsigned char> args;
  // The operator the launch runs for (a µGraph launch: none) and the binding's variable: names
  // and comments in what is built from the trace.
  OpKind op = OpKind::reshape;
  std::string var;
  // A µGraph: its compiled program (its plan, lowered for the executor's target) and buffers.
  const Program* program = nullptr;
  std::vector<const void*> inputs, outputs;
  const void* workspace = nullptr;
};

struct DeviceTrace {
  // Every buffer allocated during the run, in allocation order, kept alive by the trace.
  std::vector<std::shared_ptr<DeviceBuffer>> buffers;
  std::vector<TracedLaunch> launches;
  // The index-check flag the gather kernels write (not one of `buffers`).
  const void* error_flag = nullptr;
  // Operators run on the host, by name, with their count: a run with any is not one device run.
  std::map<std::string, int64_t> host_fallbacks;
};

}  // namespace weft
