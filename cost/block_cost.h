// Cost of a graph-defined kernel: its block graph run by every block of the grid, in waves over
// the SMs, with the for-loop's loads overlapped with its compute.
#pragma once

#include "cost/cost_model.h"

namespace weft {

// Part of the L2 that replicated tiles may occupy without being evicted by streamed data.
inline constexpr double kL2UsableFraction = 0.5;
// Stages of the for-loop's load pipeline (double buffering): loop-stage tiles are held twice.
inline constexpr int kPipelineStages = 2;

// Cost of the graph-defined kernel `op` (kind kernel) of kernel graph `g`.
KernelCost block_kernel_cost(const Graph& g, const Op& op, const Target& target);

// Shared memory one block holds (bytes): the checker's figure (ir/validate.h block_smem_bytes:
// every block tensor at once, accumulators in f32) plus the extra pipeline buffers of the
// loop-stage input tiles when loop > 1. Used for occupancy only.
int64_t block_smem_estimate(const Graph& block);

}  // namespace weft
