// The task graph's text form (`.tgraph`): print_tgraph writes it, parse_tgraph reads it back
// exactly (docs/mpk.md shows the grammar).
#pragma once

#include <string>
#include <string_view>

#include "mpk/task_graph.h"

namespace weft {

std::string print_tgraph(const TaskGraph& g);
// Throws UserError at file:line:col on malformed text or a name used before it is declared.
// parse_tgraph(print_tgraph(g)) == g.
TaskGraph parse_tgraph(std::string_view text, const std::string& file = "<tgraph>");

}  // namespace weft
