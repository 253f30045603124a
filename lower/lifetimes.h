// Live intervals of a kernel's shared buffers and of a program's temp tensors, and the checker
// that proves an assignment of offsets never overlaps two live buffers.
#pragma once

#include <string>
#include <vector>

#include "lower/interval_alloc.h"
#include "lower/plan.h"

namespace weft {

// Shared buffers of a scheduled kernel with their live intervals in schedule levels: loop-stage
// levels first (one iteration; every iteration reuses the same memory), then post-stage levels.
// Accumulators and hoisted loads (Step::hoisted) are live from before the loop (they are
// initialized or loaded there) through the whole loop to their last use;
// register accumulators (Step::in_registers) only from the first post level, where the emitter
// writes their fragments after the loop's final barrier.
// A buffer is live from the level that writes it through the last level that reads it; buffers
// written at the level where another is last read conflict (no barrier between them).
// Pipelined load buffers (KernelPlan::stages > 1) take all their slots and live through the whole
// loop, since loads for later iterations fill them while the current one computes.
std::vector<LiveBuffer> shared_lifetimes(const KernelPlan& kernel);

// Temp device tensors with live intervals in kernel launches.
std::vector<LiveBuffer> device_lifetimes(const ProgramPlan& plan);

// Violations of a kernel's shared-memory plan (empty: no two live buffers overlap, every buffer
// lies within smem_bytes).
std::vector<std::string> check_shared_memory(const KernelPlan& kernel);
// The same for the device workspace of temp tensors.
std::vector<std::string> check_device_memory(const ProgramPlan& plan);

}  // namespace weft
