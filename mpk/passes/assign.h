// Pass 6: assignment to workers. Ahead-of-time tasks get a worker and a place in its list by list
// scheduling over a predicted time per task (a fixed cost and the bytes it moves), ties going to
// the least loaded worker; just-in-time tasks are left to the schedulers at run time. The
// balance of the lists (predicted time and bytes per worker) is reported.
#pragma once

#include <cstdint>
#include <vector>

#include "mpk/task_graph.h"

namespace weft {

struct AssignOptions {
  int workers = 4;
  Dispatch dispatch = Dispatch::hybrid;
};

// The predicted time of a task on one worker (an SM while every SM works): a fixed cost per task
// (its event hop and the body's start; the hop target is 2 µs or less) plus its bytes at one
// SM's share of an H100's memory bandwidth (3.35 TB/s over 132 SMs). Predictions only (nothing
// has run on a GPU), used to balance the workers; only the ratio of the two terms matters.
struct TaskCostModel {
  double task_ns = 1000;
  double bytes_per_ns = 25;
};

// The bytes each task moves: its operator's Operator::bytes when set, else the bytes of its read
// and written boxes; empty tasks move none.
std::vector<double> task_bytes(const TaskGraph& g);
// Each task's predicted time in ns (TaskCostModel): the fixed cost, empty tasks included (they
// are a hop), plus its bytes over the bandwidth.
std::vector<double> task_costs(const TaskGraph& g, const TaskCostModel& model = {});

// True for events whose firing means every task placed before its launch range is done (every
// such task is a trigger or an ancestor of one): a barrier, where just-in-time regions end.
std::vector<bool> barrier_events(const TaskGraph& g);

// Needs a linearized graph. Marks the JIT tasks (aot: none; jit: all; hybrid: the tasks of
// data-dependent operators and, following events forward, every task launched by a non-barrier
// event one of them triggers), then walks the tasks in linear order giving each AOT task to the
// worker that can start it earliest (its event's triggers' predicted finish vs the worker's free
// time), among equals the one with the least predicted time so far, then the fewest bytes, then
// the lowest index (JIT tasks, dealt round-robin by the schedulers at run time, are estimated to
// start when ready, on no worker in particular). In a decode step most
// tasks wait for a short chain, so most choices are ties: the tie-break is what spreads the work.
// Each worker's list is its tasks in linear order, so increasing in topological order; any
// assignment of that form is deadlock-free (docs/mpk.md), so the choice only affects speed.
TaskGraph assign_workers(const TaskGraph& graph, const AssignOptions& options);

// How evenly the AOT lists share the work: per worker, its list's predicted time, bytes and
// tasks (JIT tasks are not counted), and the largest over the mean of time and of bytes (1: even;
// 1 also when there is nothing to share).
struct WorkerBalance {
  std::vector<double> time_ns, bytes;
  std::vector<int64_t> tasks;
  double time_imbalance = 1, bytes_imbalance = 1;
};
WorkerBalance worker_balance(const TaskGraph& g);

}  // namespace weft
