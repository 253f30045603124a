// Parser of the µGraph text format (docs/format.md) into a type-checked Graph.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ir/graph.h"

namespace weft {

// Limits that keep every size computation far from int64 overflow. Larger inputs are rejected
// with a UserError instead of reaching undefined behaviour.
inline constexpr int64_t kMaxTensorElements = int64_t{1} << 48;
inline constexpr int64_t kMaxGridBlocks = int64_t{1} << 40;  // product of the grid dims
inline constexpr int64_t kMaxLoopOrBlock = int64_t{1} << 40;
inline constexpr int kMaxCallNesting = 64;

// Parses one file's text. Every mistake is a UserError located at the offending token
// (`filename`:line:col) saying what was expected and what was found.
Graph parse_graph(std::string_view text, const std::string& filename);

}  // namespace weft
