// Pass 6: assignment to workers. Ahead-of-time tasks get a worker and a place in its list by list
// scheduling over a cost estimate; just-in-time tasks are left to the schedulers at run time.
#pragma once

#include <vector>

#include "mpk/task_graph.h"

namespace weft {

struct AssignOptions {
  int workers = 4;
  Dispatch dispatch = Dispatch::hybrid;
};

// Estimated run time of each task (arbitrary units): the bytes of its read and written boxes, a
// roofline time for bandwidth-bound decode kernels; empty tasks cost 0.
std::vector<double> task_costs(const TaskGraph& g);

// True for events whose firing means every task placed before its launch range is done (every
// such task is a trigger or an ancestor of one): a barrier, where just-in-time regions end.
std::vector<bool> barrier_events(const TaskGraph& g);

// Needs a linearized graph. Marks the JIT tasks (aot: none; jit: all; hybrid: the tasks of
// data-dependent operators and, following events forward, every task launched by a non-barrier
// event one of them triggers), then walks the tasks in linear order giving each AOT task to the
// worker that can start it earliest (its event's triggers' estimated finish vs the worker's
// free time; ties to the lowest worker; JIT tasks are estimated on the least loaded worker).
// Each worker's list is its tasks in linear order, so increasing in topological order.
TaskGraph assign_workers(const TaskGraph& graph, const AssignOptions& options);

// Estimated busy time of each worker: the costs of its AOT list (JIT tasks are not counted).
std::vector<double> worker_loads(const TaskGraph& g);

}  // namespace weft
