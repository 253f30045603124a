// First lowering step: a µGraph to an unscheduled kernel plan (one kernel per kernel-level op).
#pragma once

#include "core/target.h"
#include "ir/graph.h"
#include "lower/plan.h"

namespace weft {

// Pre-defined operators become library kernels (composites are first expanded into primitives,
// one library kernel each, over temp tensors); graph-defined kernels become block plans with
// every block value in shared memory, row-major, and thread graphs inlined as thread steps over
// register buffers. On a CPU target every tensor is stored as f32.
ProgramPlan build_plan(const Graph& graph, const Target& target);

}  // namespace weft
