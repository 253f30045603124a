// Graphviz drawing of a µGraph's hierarchy: kernel graph, block graphs as nested clusters (loop
// stage and post stage apart), thread graphs nested inside them.
#pragma once

#include <string>

#include "ir/graph.h"

namespace weft {

// DOT text for `g` (a kernel graph). Deterministic: the same graph gives the same bytes.
// Edges carry tensor types; iterator and saver edges also carry imap/fmap/omap.
std::string to_dot(const Graph& g);

}  // namespace weft
