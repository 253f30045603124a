// Vertical merging of graph-defined kernels: a kernel whose blocks read, tile for tile, what the
// same blocks of an earlier kernel saved becomes one kernel with both block graphs, so the
// intermediate never goes through device memory. Used on the µGraphs stitched from a partitioned
// program's parts, whose cuts the search of each part cannot see across.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace weft {

// The kernel graph `g` with the graph-defined kernel `producer` merged into the graph-defined
// kernel `consumer` (indices into g.ops), or nullopt when they cannot merge: the consumer must
// read at least one of the producer's results, each through an iterator whose block tile is the
// tile the producer's block saved (same grid, the saver's omap equal to the iterator's imap on
// every grid dim in use, no fmap); the loops must agree (equal, or one kernel with a loop of 1
// and every operator after it); such an iterator must run after the consumer's loop; and no
// other path may lead from the producer to the consumer. The producer's saves that anything
// else reads (or that are program outputs) stay; the merged kernel runs with `threads` threads
// per block.
std::optional<Graph> merge_kernel_pair(const Graph& g, int producer, int consumer, int64_t threads);

// Every µGraph reached from `g` by merging kernel pairs one after another, in program order of
// the consumer (first mergeable pair first), ending at the first µGraph with no mergeable pair;
// a merged kernel runs with the larger of the two kernels' threads per block. Empty when nothing
// merges.
std::vector<Graph> merge_kernels(const Graph& g);

}  // namespace weft
