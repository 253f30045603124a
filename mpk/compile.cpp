// The pass list of the MPK compiler; each step is one pass's entry function.
#include "mpk/compile.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "mpk/decode_tasks.h"
#include "mpk/decompose.h"
#include "mpk/encode.h"
#include "mpk/fuse_events.h"
#include "mpk/linearize.h"
#include "mpk/normalize.h"
#include "mpk/verify_tgraph.h"

namespace weft {

const std::vector<std::string>& mpk_passes() {
  static const std::vector<std::string> passes = {"decompose", "deps",      "fuse-events",
                                                  "normalize", "linearize", "assign"};
  return passes;
}

MpkCompiled compile_task_graph(const ProgramPlan& plan, const MpkOptions& options) {
  const auto& passes = mpk_passes();
  if (!options.stop_after.empty() &&
      std::find(passes.begin(), passes.end(), options.stop_after) == passes.end())
    throw UserError(fmt::format("unknown MPK pass '{}' (passes: {})", options.stop_after,
                                fmt::join(passes, ", ")));
  const auto start = std::chrono::steady_clock::now();
  MpkCompiled r;
  auto done = [&](const char* pass) { return options.stop_after == pass; };
  r.graph = decompose_plan(plan, options.data_dependent);
  if (options.decode_on_device) r.graph = add_decode_tasks(r.graph, plan);
  if (done("decompose")) return r;
  r.graph = analyze_dependencies(r.graph, &r.deps);
  r.events_before_fusion = static_cast<int64_t>(r.graph.events.size());
  if (done("deps")) return r;
  r.graph = fuse_events(r.graph);
  if (done("fuse-events")) return r;
  r.graph = normalize_events(r.graph, &r.empty_tasks);
  if (done("normalize")) return r;
  r.graph = linearize_tasks(r.graph);
  if (done("linearize")) return r;
  r.graph = assign_workers(r.graph, options.assign);
  r.balance = worker_balance(r.graph);
  if (done("assign")) return r;
  std::vector<std::string> problems = verify_task_graph(r.graph);
  WEFT_CHECK(problems.empty(), "the compiled task graph of {} fails verification: {}", plan.name,
             fmt::join(problems, "; "));
  r.blob = encode_task_graph(r.graph);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace weft
