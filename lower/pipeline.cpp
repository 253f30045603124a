// The named flat pass pipeline.
#include "lower/pipeline.h"

#include <functional>

#include "core/error.h"
#include "lower/build_plan.h"
#include "lower/choose_cpu_blocking.h"
#include "lower/choose_stages.h"
#include "lower/fuse_accumulators.h"
#include "lower/fuse_threads.h"
#include "lower/hoist_loads.h"
#include "lower/plan_device_memory.h"
#include "lower/plan_shared_memory.h"
#include "lower/schedule.h"
#include "lower/select_layouts.h"

namespace weft {

namespace {

// One pass: its name (for --print-after, --stop-after and the golden files) and what it does to a
// plan.
struct Pass {
  const char* name;
  ProgramPlan (*run)(const ProgramPlan&, const Target&);
};

// After `build`, which makes the first plan from the µGraph.
const Pass kPasses[] = {
    {"fuse-threads", [](const ProgramPlan& p, const Target&) { return fuse_thread_graphs(p); }},
    {"select-layouts", select_layouts},
    {"fuse-accumulators", fuse_accumulators},
    {"schedule", [](const ProgramPlan& p, const Target&) { return schedule_by_depth(p); }},
    {"hoist-loads", [](const ProgramPlan& p, const Target&) { return hoist_invariant_loads(p); }},
    {"choose-stages", choose_stages},
    {"plan-shared-memory", plan_shared_memory},
    {"choose-cpu-blocking", choose_cpu_blocking},
    {"plan-device-memory",
     [](const ProgramPlan& p, const Target&) { return plan_device_memory(p); }},
};

constexpr const char* kBuild = "build";

}  // namespace

const std::vector<std::string>& lowering_passes() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = {kBuild};
    for (const Pass& p : kPasses) n.push_back(p.name);
    return n;
  }();
  return names;
}

ProgramPlan lower_graph(const Graph& graph, const Target& target, const std::string& stop_after) {
  const auto& names = lowering_passes();
  if (!stop_after.empty() && std::find(names.begin(), names.end(), stop_after) == names.end())
    throw UserError(fmt::format("unknown lowering pass '{}'", stop_after));
  ProgramPlan p = build_plan(graph, target);
  if (stop_after == kBuild) return p;
  for (const Pass& pass : kPasses) {
    p = pass.run(p, target);
    if (stop_after == pass.name) break;
  }
  return p;
}

}  // namespace weft
