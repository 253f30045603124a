// The named flat step list of the MPK compiler; each step is one pass's entry function.
#include "mpk/passes/pipeline.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "mpk/encode.h"
#include "mpk/passes/add_decode_tasks.h"
#include "mpk/passes/decompose.h"
#include "mpk/passes/fuse_events.h"
#include "mpk/passes/linearize.h"
#include "mpk/passes/normalize.h"
#include "mpk/verify_tgraph.h"

namespace weft {

namespace {

// One step: its name (for --stop-after, --print-after and the golden files) and what it does to
// the task graph being compiled (and the figures it reports).
struct CompileStep {
  const char* name;
  void (*run)(const ProgramPlan& plan, const MpkOptions& options, MpkCompiled& r);
};

const CompileStep kSteps[] = {
    {"decompose",
     [](const ProgramPlan& plan, const MpkOptions& o, MpkCompiled& r) {
       r.graph = decompose_plan(plan, o.data_dependent);
       if (o.decode_on_device) r.graph = add_decode_tasks(r.graph, plan);
     }},
    {"deps",
     [](const ProgramPlan&, const MpkOptions&, MpkCompiled& r) {
       r.graph = analyze_dependencies(r.graph, &r.deps);
       r.events_before_fusion = static_cast<int64_t>(r.graph.events.size());
     }},
    {"fuse-events",
     [](const ProgramPlan&, const MpkOptions&, MpkCompiled& r) { r.graph = fuse_events(r.graph); }},
    {"normalize", [](const ProgramPlan&, const MpkOptions&,
                     MpkCompiled& r) { r.graph = normalize_events(r.graph, &r.empty_tasks); }},
    {"linearize", [](const ProgramPlan&, const MpkOptions&,
                     MpkCompiled& r) { r.graph = linearize_tasks(r.graph); }},
    {"assign",
     [](const ProgramPlan&, const MpkOptions& o, MpkCompiled& r) {
       r.graph = assign_workers(r.graph, o.assign);
       r.balance = worker_balance(r.graph);
     }},
};

}  // namespace

const std::vector<std::string>& mpk_passes() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const CompileStep& s : kSteps) n.push_back(s.name);
    return n;
  }();
  return names;
}

void check_mpk_step(const std::string& step) {
  const auto& names = mpk_passes();
  if (std::find(names.begin(), names.end(), step) == names.end())
    throw UserError(
        fmt::format("unknown MPK pass '{}' (passes: {})", step, fmt::join(names, ", ")));
}

MpkCompiled compile_task_graph(const ProgramPlan& plan, const MpkOptions& options,
                               const MpkStepHook& after_step) {
  if (!options.stop_after.empty()) check_mpk_step(options.stop_after);
  const auto start = std::chrono::steady_clock::now();
  MpkCompiled r;
  for (const CompileStep& step : kSteps) {
    step.run(plan, options, r);
    if (after_step) after_step(step.name, r.graph);
    if (options.stop_after == step.name) return r;
  }
  std::vector<std::string> problems = verify_task_graph(r.graph);
  WEFT_CHECK(problems.empty(), "the compiled task graph of {} fails verification: {}", plan.name,
             fmt::join(problems, "; "));
  r.blob = encode_task_graph(r.graph);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

namespace {

template <typename Loads>
std::set<std::string> kernels_loading(const ProgramPlan& plan, const Loads& loads) {
  std::set<std::string> out;
  for (const KernelPlan& k : plan.kernels)
    if (!k.library)
      for (const Step& s : k.loop_steps)
        if (s.kind == StepKind::load && loads(s.inputs[0])) out.insert(k.name);
  return out;
}

}  // namespace

std::set<std::string> kernels_reading(const ProgramPlan& plan, const std::string& prefix) {
  return kernels_loading(plan, [&](const std::string& t) { return t.rfind(prefix, 0) == 0; });
}

std::set<std::string> kernels_reading_any(const ProgramPlan& plan,
                                          const std::set<std::string>& tensors) {
  return kernels_loading(plan, [&](const std::string& t) { return tensors.count(t) > 0; });
}

}  // namespace weft
