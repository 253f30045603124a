// Pass 1 of the MPK compiler: a lowered program's kernel plans to operators and tasks, each task
// with the exact boxes of the device tensors it reads and writes. No events yet.
#pragma once

#include <set>
#include <string>

#include "lower/plan.h"
#include "mpk/task_graph.h"

namespace weft {

// One operator per kernel of `plan`, in launch order: a graph-defined kernel has one task per
// block (x fastest, as CUDA numbers blocks), whose reads are its loads' tiles over the whole
// for-loop (the imap slice, times the loop along the fmap dim) and whose writes are its stores'
// tiles (the omap slice); a library kernel is one task reading its operands whole and writing its
// results whole. Operators named in `data_dependent` (kernel names) are marked so. Throws
// UserError for a name that is no kernel of the plan.
TaskGraph decompose_plan(const ProgramPlan& plan, const std::set<std::string>& data_dependent = {});

// A graph of `plan`'s device tensors only (decompose_plan's), with no operators or tasks.
TaskGraph plan_tensors(const ProgramPlan& plan);

}  // namespace weft
