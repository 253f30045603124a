// Pass: operator scheduling by depth, with one barrier between consecutive depths.
#pragma once

#include "lower/plan.h"

namespace weft {

// In each stage, a step's depth is 1 + the largest depth of the steps of the same stage that
// produce its operands (0 without any). Steps are ordered by depth (stable), and a barrier is put
// after every depth level: this is the fewest block-wide synchronizations for which every step
// reads only results completed before the last barrier. The loop stage also ends with a barrier,
// so that the next iteration's loads cannot overwrite tiles still being read.
ProgramPlan schedule_by_depth(const ProgramPlan& plan);

}  // namespace weft
