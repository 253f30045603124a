// Pass: pipeline depth. How many iterations' loads of each kernel's for-loop are in flight.
#pragma once

#include "core/target.h"
#include "lower/plan.h"

namespace weft {

// On GPU targets, gives each graph-defined kernel with loop-stage loads (not hoisted: those are
// issued once before the loop and keep one buffer) the largest `stages` in
// 1..min(kMaxStages, loop) whose shared-memory peak (loaded buffers multi-buffered, see
// KernelPlan::stages) fits the target's per-block limit; CPU targets keep 1 (their loads are
// synchronous copies). Needs a scheduled plan: the peak comes from the same lifetimes and
// allocator as plan-shared-memory.
inline constexpr int64_t kMaxStages = 4;
ProgramPlan choose_stages(const ProgramPlan& plan, const Target& target);

}  // namespace weft
