// Pass: thread-graph fusion. Chains of elementwise block ops become thread steps in registers.
#pragma once

#include "lower/plan.h"

namespace weft {

// Within each stage of each graph-defined kernel, an elementwise compute step P is fused into
// its consumer E when E is elementwise too, P's result has no other reader and the same shape as
// E's (no recomputation of broadcast values). Each fused tree becomes one thread step placed at
// its root; its inner results move to registers (no shared memory, no barrier).
ProgramPlan fuse_thread_graphs(const ProgramPlan& plan);

}  // namespace weft
