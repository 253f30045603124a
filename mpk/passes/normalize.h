// Pass 4: normalization. Every task ends with exactly one event it waits for and one it triggers
// (the runtime's task descriptor has one slot for each), by inserting empty tasks.
#pragma once

#include <cstdint>

#include "mpk/task_graph.h"

namespace weft {

// Tasks waiting for events e1..en (n > 1) wait instead for a new join event, triggered by n empty
// tasks, the i-th waiting for e_i; tasks triggering e1..en trigger instead a new fork event,
// waited for by n empty tasks, the i-th triggering e_i. Tasks with equal sets share the new
// event and its empty tasks. Reachability between the original tasks is unchanged. `added`
// receives the number of empty tasks inserted.
TaskGraph normalize_events(const TaskGraph& graph, int64_t* added = nullptr);

}  // namespace weft
