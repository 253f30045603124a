// The independent verifier of a compiled task graph: checks, from the tasks' accesses and the
// events alone, everything the runtime relies on. Shares no analysis code with the passes.
#pragma once

#include <string>
#include <vector>

#include "mpk/task_graph.h"

namespace weft {

// Problems found (empty: the graph is sound), each one line naming tasks and events:
//  - normal form: every task waits for exactly one event and triggers exactly one; begin is
//    event 0 (need 1, never triggered), end event 1 (launches nothing);
//  - each event's need equals the number of tasks triggering it;
//  - linear order: each event's launched tasks are exactly its range [first, last], and every
//    task comes after the tasks its event waits for;
//  - every pair of tasks of different operators that touch a common byte, one of them writing,
//    is ordered by a path of events (byte runs of both accesses, not boxes);
//  - assignment: every AOT task is in exactly one worker list, JIT tasks in none, and each list
//    is increasing in the linear order;
//  - abstract execution (workers take their list heads and any JIT task once its event has
//    fired) runs every task and fires end.
std::vector<std::string> verify_task_graph(const TaskGraph& g);

}  // namespace weft
