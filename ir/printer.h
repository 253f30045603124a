// Printer of the canonical µGraph text form (docs/format.md); parse_graph reads it back exactly.
#pragma once

#include <string>

#include "ir/graph.h"

namespace weft {

// Canonical text of `g` (a kernel graph, or a block/thread graph printed as a bare body).
// With `type_comments`, every statement ends in a comment giving its results' types.
std::string print_graph(const Graph& g, bool type_comments = true);

}  // namespace weft
