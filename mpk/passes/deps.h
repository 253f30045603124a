// Pass 2: dependency analysis. Orders every pair of tasks of different operators whose accesses
// conflict (read-after-write, write-after-read, write-after-write, by exact overlap of bytes).
#pragma once

#include <cstdint>

#include "mpk/task_graph.h"

namespace weft {

struct DependencyReport {
  // Task pairs of different operators whose byte spans meet in one storage (the candidates),
  // those compared byte for byte, and those left uncompared because a path already orders them.
  int64_t candidates = 0, compared = 0, implied = 0;
  int64_t raw = 0, war = 0, waw = 0;  // conflicts among the compared pairs (a pair may be several)
  int64_t edges = 0;                  // dependencies kept after the transitive reduction
};

// From a decomposed graph (no events): a task depends on an earlier operator's task when their
// accesses conflict. Edges implied by a path are dropped (transitive reduction: the candidates of
// a task are taken latest first, and one a kept edge already orders is never compared), then each
// remaining edge u -> v becomes an event of need 1 that u triggers and v waits for. Events 0 and
// 1 are begin (waited for by the tasks without predecessors) and end (triggered by the tasks
// without successors). Tasks of one operator never conflict (InternalError otherwise: blocks of
// one kernel run concurrently). Workspace tensors that share bytes are compared byte by byte.
TaskGraph analyze_dependencies(const TaskGraph& graph, DependencyReport* report = nullptr);

// True when accesses a (of tensor a.tensor) and b share a byte: same tensor, box intersection;
// tensors sharing workspace bytes, exact byte runs (the byte spans above 2^16 runs per box).
bool accesses_overlap(const TaskGraph& g, const Access& a, const Access& b);

}  // namespace weft
