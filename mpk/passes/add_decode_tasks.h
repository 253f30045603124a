// Pass (after decompose when MpkOptions::decode_on_device): the decode loop's operators
// (mpk/decode_layout.h) added to the task graph, so the loop runs on the device.
#pragma once

#include "lower/plan.h"
#include "mpk/task_graph.h"

namespace weft {

// `g`, decomposed from `plan`, with the decode operators added, embed and rope_tables before the
// plan's operators and finish after them (program order, which the deps pass turns into edges),
// their accesses whole tensors plus the state. UserError when the plan declares no decode
// interface or does not fit it (mpk/decode_interface.h).
TaskGraph add_decode_tasks(const TaskGraph& g, const ProgramPlan& plan);

}  // namespace weft
