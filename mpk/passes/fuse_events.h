// Pass 3: event fusion. Events with equal launch sets merge (their triggers join), then events
// with equal trigger sets merge (their launches join), until neither changes anything.
#pragma once

#include "mpk/task_graph.h"

namespace weft {

// Merges normal events as above, to a fixpoint; begin and end stay as they are. Task-to-task
// reachability is unchanged (an event orders each of its triggers before each of its launches,
// and both merges keep exactly those pairs). Each merged event's need is its trigger count.
TaskGraph fuse_events(const TaskGraph& graph);

}  // namespace weft
