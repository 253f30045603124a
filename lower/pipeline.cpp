// The named flat pass pipeline.
#include "lower/pipeline.h"

#include <functional>

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

const std::vector<std::string>& lowering_passes() {
  static const std::vector<std::string> names = {
      "build",       "fuse-threads",  "select-layouts",     "fuse-accumulators", "schedule",
      "hoist-loads", "choose-stages", "plan-shared-memory", "plan-device-memory"};
  return names;
}

ProgramPlan lower_graph(const Graph& graph, const Target& target, const std::string& stop_after) {
  const auto& names = lowering_passes();
  if (!stop_after.empty() && std::find(names.begin(), names.end(), stop_after) == names.end())
    throw UserError(fmt::format("unknown lowering pass '{}'", stop_after));
  using PassFn = std::function<ProgramPlan(const ProgramPlan&)>;
  const std::vector<PassFn> passes = {
      [](const ProgramPlan& p) { return fuse_thread_graphs(p); },
      [&](const ProgramPlan& p) { return select_layouts(p, target); },
      [&](const ProgramPlan& p) { return fuse_accumulators(p, target); },
      [](const ProgramPlan& p) { return schedule_by_depth(p); },
      [](const ProgramPlan& p) { return hoist_invariant_loads(p); },
      [&](const ProgramPlan& p) { return choose_stages(p, target); },
      [&](const ProgramPlan& p) { return plan_shared_memory(p, target); },
      [](const ProgramPlan& p) { return plan_device_memory(p); },
  };
  ProgramPlan p = build_plan(graph, target);
  if (stop_after == names[0]) return p;
  for (size_t i = 0; i < passes.size(); ++i) {
    p = passes[i](p);
    if (stop_after == names[i + 1]) break;
  }
  return p;
}

}  // namespace weft
