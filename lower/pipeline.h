// The lowering pipeline: a µGraph to a scheduled, memory-planned kernel plan, one named pass at a
// time. Every backend consumes its result.
#pragma once

#include <string>
#include <vector>

#include "core/target.h"
#include "ir/graph.h"
#include "lower/plan.h"

namespace weft {

// Pass names in order: build, fuse-threads, select-layouts, fuse-accumulators, schedule,
// hoist-loads, choose-stages, plan-shared-memory, choose-cpu-blocking, plan-device-memory.
const std::vector<std::string>& lowering_passes();

// Runs the pipeline through `stop_after` (a pass name; empty: all). Throws UserError for an
// unknown pass name.
ProgramPlan lower_graph(const Graph& graph, const Target& target,
                        const std::string& stop_after = "");

}  // namespace weft
