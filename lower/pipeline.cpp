// The named flat pass pipeline.
#include "lower/pipeline.h"

#include <algorithm>

#include "core/error.h"
#include "lower/build_plan.h"
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

// One step of the pipeline: its name (for --stop-after and the golden files) and what it does.
// Every step gets the graph and the target; only `build` reads the graph (the plan it gets is
// empty), the others transform the plan.
struct LoweringPass {
  const char* name;
  ProgramPlan (*run)(const Graph& graph, const ProgramPlan& plan, const Target& target);
};

constexpr LoweringPass kPasses[] = {
    {"build", [](const Graph& g, const ProgramPlan&, const Target& t) { return build_plan(g, t); }},
    {"fuse-threads",
     [](const Graph&, const ProgramPlan& p, const Target&) { return fuse_thread_graphs(p); }},
    {"select-layouts",
     [](const Graph&, const ProgramPlan& p, const Target& t) { return select_layouts(p, t); }},
    {"fuse-accumulators",
     [](const Graph&, const ProgramPlan& p, const Target& t) { return fuse_accumulators(p, t); }},
    {"schedule",
     [](const Graph&, const ProgramPlan& p, const Target&) { return schedule_by_depth(p); }},
    {"hoist-loads",
     [](const Graph&, const ProgramPlan& p, const Target&) { return hoist_invariant_loads(p); }},
    {"choose-stages",
     [](const Graph&, const ProgramPlan& p, const Target& t) { return choose_stages(p, t); }},
    {"plan-shared-memory",
     [](const Graph&, const ProgramPlan& p, const Target& t) { return plan_shared_memory(p, t); }},
    {"plan-device-memory",
     [](const Graph&, const ProgramPlan& p, const Target&) { return plan_device_memory(p); }},
};

}  // namespace

const std::vector<std::string>& lowering_passes() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const LoweringPass& pass : kPasses) out.emplace_back(pass.name);
    return out;
  }();
  return names;
}

ProgramPlan lower_graph(const Graph& graph, const Target& target, const std::string& stop_after) {
  const auto& names = lowering_passes();
  if (!stop_after.empty() && std::find(names.begin(), names.end(), stop_after) == names.end())
    throw UserError(fmt::format("unknown lowering pass '{}'", stop_after));
  ProgramPlan plan;
  for (const LoweringPass& pass : kPasses) {
    plan = pass.run(graph, plan, target);
    if (stop_after == pass.name) break;
  }
  return plan;
}

}  // namespace weft
