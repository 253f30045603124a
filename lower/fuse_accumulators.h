// Pass: accumulator fusion. A block matmul whose only reader is an accum_sum adds straight into
// the accumulator, keeping the sum in tensor-core registers across the loop when it can (GPU).
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
// has a tensor-core tiling (lower/mma_tiling.h; never on CPU targets, whose plans are all f32).
std::vector<AccumulatorFusion> accumulator_fusions(const KernelPlan& k);

// Applies accumulator_fusions to every graph-defined kernel, on every target: each product
// becomes a reg buffer (no shared memory, no CPU arena), and each register accumulator's step is
// marked in_registers, so its shared buffer is live only after the loop (lower/lifetimes.cpp) and
// choose-stages and plan-shared-memory see the real footprint.
ProgramPlan fuse_accumulators(const ProgramPlan& plan, const Target& target);

// The fusions a lowered plan records, as the emitters read them: every accum_sum whose input is a
// reg buffer, which a loop-stage matmul writes, in loop-step order. WEFT_CHECKs that the marks are
// well formed and are exactly what accumulator_fusions admits (a plan edited or lowered by another
// pipeline is refused, not guessed at).
std::vector<AccumulatorFusion> planned_accumulator_fusions(const KernelPlan& k);

}  // namespace weft
