// The validity checker of µGraphs: every rule a graph must satisfy beyond what type inference
// enforces (path rule, stages, divisibility, omap rules, shared memory, grid limits, ...).
#pragma once

#include <vector>

#include "core/error.h"
#include "core/target.h"
#include "ir/graph.h"

namespace weft {

// All violations in `g` (a kernel graph) against `target`, in program order; empty if valid.
// Each is a UserError located at the offending statement when the graph came from a file.
std::vector<UserError> check_graph(const Graph& g, const Target& target);

// Throws the first violation of check_graph, if any.
void validate(const Graph& g, const Target& target);

// Shared memory (bytes) a block graph needs on `target` (an upper bound until memory planning).
int64_t block_smem_bytes(const Graph& block);

}  // namespace weft
