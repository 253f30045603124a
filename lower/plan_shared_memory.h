// Pass: shared-memory planning. Offsets for every shared buffer of every block.
#pragma once

#include "core/target.h"
#include "lower/plan.h"

namespace weft {

// Allocates each kernel's shared buffers over their lifetimes (lower/lifetimes.h) with the best
// of first / best / worst fit, sets smem_bytes to the peak and proves the result with
// check_shared_memory. Throws UserError when a block needs more than the target allows.
ProgramPlan plan_shared_memory(const ProgramPlan& plan, const Target& target);

}  // namespace weft
