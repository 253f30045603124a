// Pass 5: linearization (MPK, Algorithm 1). Orders the tasks so that the tasks each event launches
// are contiguous and every task comes after the tasks its event waits for.
#pragma once

#include "mpk/task_graph.h"

namespace weft {

// Breadth-first over events from begin: an event is taken once all its triggering tasks are
// placed, and its launched tasks are appended together (in their current order); each event
// records its range [first, last]. Needs normal form (mpk/passes/normalize.h). Tasks are
// renumbered; worker lists, if any, follow. InternalError when some task can never be placed (a
// cycle).
TaskGraph linearize_tasks(const TaskGraph& graph);

}  // namespace weft
