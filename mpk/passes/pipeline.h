// The MPK compiler: a lowered program to a verified, encoded task graph, one named step at a time
// (a flat table, like lower/pipeline.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "lower/plan.h"
#include "mpk/passes/assign.h"
#include "mpk/passes/deps.h"
#include "mpk/task_graph.h"

namespace weft {

// Step names in order: decompose (with MpkOptions::decode_on_device, then add_decode_tasks), deps,
// fuse-events, normalize, linearize, assign; verify and encode follow the last.
const std::vector<std::string>& mpk_passes();

struct MpkOptions {
  AssignOptions assign;
  std::set<std::string> data_dependent;  // plan kernel names (hybrid dispatch)
  std::string stop_after;                // a step name; empty: all, then verify and encode
  // A decode-step program (mpk/decode_interface.h) whose decode loop runs on the device:
  // decompose also adds the loop's tasks (mpk/passes/add_decode_tasks.h).
  bool decode_on_device = false;
};

struct MpkCompiled {
  TaskGraph graph;
  std::vector<uint8_t> blob;  // empty when stopped early
  DependencyReport deps;
  int64_t events_before_fusion = 0, empty_tasks = 0;
  WorkerBalance balance;  // of the AOT lists, once assigned
  double seconds = 0;     // compile time of the steps, verify and encode
};

// Called after each step with its name and the task graph it made (`weft mpk compile
// --print-after STEP`).
using MpkStepHook = std::function<void(const std::string& step, const TaskGraph& graph)>;

// Runs the steps; InternalError when the verifier rejects the result (a bug in a step).
// UserError for an unknown step name or data-dependent kernel.
MpkCompiled compile_task_graph(const ProgramPlan& plan, const MpkOptions& options,
                               const MpkStepHook& after_step = {});

// UserError naming the steps unless `step` is one of them.
void check_mpk_step(const std::string& step);

// Names of the graph-defined kernels that load a tensor whose name starts with `prefix` (for
// MpkOptions::data_dependent: `--data-dependent-reads Kc` marks a decode step's attention kernels,
// which read the KV caches).
std::set<std::string> kernels_reading(const ProgramPlan& plan, const std::string& prefix);
// Names of the graph-defined kernels that load any of `tensors`.
std::set<std::string> kernels_reading_any(const ProgramPlan& plan,
                                          const std::set<std::string>& tensors);

}  // namespace weft
