// Loading a µGraph file: the bytes must be UTF-8 text of at most 64 MiB; then parse_graph.
#pragma once

#include <string>

#include "ir/graph.h"

namespace weft {

// Reads and parses a µGraph file; throws UserError (file not found, not text, syntax, types).
Graph load_graph(const std::string& path);

}  // namespace weft
