// Pass: loop-invariant loads. A tile that is the same every iteration is loaded once, before the
// for-loop, into a single buffer.
#pragma once

#include "lower/plan.h"

namespace weft {

// Marks every loop-stage load without an fmap (an `iter` whose tile does not move with the
// iteration) of a graph-defined kernel with loop > 1 as Step::hoisted: backends issue it once
// before the loop, choose-stages does not multi-buffer it and its buffer is live from before the
// loop through the whole loop (lower/lifetimes.cpp). The same on every target: reloading an
// unchanged tile is wasted traffic on the CPU too. Kernels with loop = 1 are unchanged (nothing
// to save, and the longer lifetime could only cost memory).
ProgramPlan hoist_invariant_loads(const ProgramPlan& plan);

}  // namespace weft
