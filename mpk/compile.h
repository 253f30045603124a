// The MPK compiler as a flat list of named passes: a lowered program to a verified, encoded task
// graph.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "lower/plan.h"
#include "mpk/assign.h"
#include "mpk/deps.h"
#include "mpk/task_graph.h"

namespace weft {

// decompose (with MpkOptions::decode_on_device, then add_decode_tasks), deps, fuse-events,
// normalize, linearize, assign (then verify and encode).
const std::vector<std::string>& mpk_passes();

struct MpkOptions {
  AssignOptions assign;
  std::set<std::string> data_dependent;  // plan kernel names (hybrid dispatch)
  std::string stop_after;                // a pass name; empty: all, then verify and encode
  // A decode-step program (mpk/decode_demo.h) whose decode loop runs on the device: decompose
  // also adds the loop's tasks (mpk/decode_tasks.h).
  bool decode_on_device = false;
};

struct MpkCompiled {
  TaskGraph graph;
  std::vector<uint8_t> blob;  // empty when stopped early
  DependencyReport deps;
  int64_t events_before_fusion = 0, empty_tasks = 0;
  WorkerBalance balance;  // of the AOT lists, once assigned
  double seconds = 0;     // compile time of the passes, verify and encode
};

// Runs the passes; InternalError when the verifier rejects the result (a bug in a pass).
// UserError for an unknown pass name or data-dependent kernel.
MpkCompiled compile_task_graph(const ProgramPlan& plan, const MpkOptions& options);

}  // namespace weft
