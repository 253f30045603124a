// Graphviz picture of a task graph: tasks as boxes (one colour per operator, empty tasks as
// points), events as diamonds with their need, edges trigger -> event -> launched task.
#pragma once

#include <string>

#include "mpk/task_graph.h"

namespace weft {

std::string tgraph_to_dot(const TaskGraph& g);

}  // namespace weft
