// Pass: accumulator fusion. A block matmul whose only reader is an accum_sum adds straight into
// the accumulator (GPU), keeping the sum in tensor-core registers across the loop when it can.
#pragma once

#include <string>
#include <vector>

#include "core/target.h"
#include "lower/plan.h"

namespace weft {

// One matmul fused into the accumulator that reads it.
struct AccumulatorFusion {
  std::string product;      // the matmul's result: never stored (a reg buffer)
  std::string accumulator;  // the accum_sum's result
  bool registers = false;   // the sum lives in mma fragments during the loop (Step::in_registers)
  friend bool operator==(const AccumulatorFusion&, const AccumulatorFusion&) = default;
};

// The fusions kernel `k` admits, in loop-step order: a loop-stage matmul whose result has exactly
// one reader, a loop-stage accum_sum whose result no loop step reads. `registers` when the matmul
// has a tensor-core tiling (lower/mma_tiling.h). The pass applies them; the CUDA emitter checks
// the plan it is given against them.
std::vector<AccumulatorFusion> accumulator_fusions(const KernelPlan& k);

// On GPU targets, applies accumulator_fusions to every graph-defined kernel: each product
// becomes a reg buffer (no shared memory), and each register accumulator's step is marked
// in_registers, so its shared buffer is live only after the loop (lower/lifetimes.cpp) and
// choose-stages and plan-shared-memory see the real footprint. CPU plans are unchanged (the CPU
// emitter fuses on its own; its arena is not a scarce resource).
ProgramPlan fuse_accumulators(const ProgramPlan& plan, const Target& target);

}  // namespace weft
