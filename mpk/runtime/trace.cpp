// Chrome trace-event JSON from protocol spans (nlohmann::json writes it).
#include "mpk/runtime/trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace weft {

namespace {

uint64_t earliest_start(const std::vector<TaskSpan>& spans, uint64_t origin) {
  for (const TaskSpan& s : spans)
    if (s.end != 0) origin = std::min(origin, s.start);
  return origin;
}

nlohmann::json thread_name(uint32_t tid, const std::string& name) {
  return {
      {"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", tid}, {"args", {{"name", name}}}};
}

nlohmann::json complete_event(std::string name, const char* cat, uint32_t tid, uint64_t start,
                              uint64_t end, uint64_t origin, nlohmann::json args) {
  return {{"name", std::move(name)},
          {"cat", cat},
          {"ph", "X"},
          {"pid", 0},
          {"tid", tid},
          {"ts", static_cast<double>(start - origin) / 1e3},
          {"dur", static_cast<double>(end - start) / 1e3},
          {"args", std::move(args)}};
}

// One event per filled span of one launch; `kernel_names` empty: named "t<task> k<kernel>
// [block]", else after the kernel. `extra(iteration)` adds arguments to each.
template <typename Extra>
void task_events(nlohmann::json& events, const DeviceGraph& graph,
                 const std::vector<TaskSpan>& spans, uint64_t origin,
                 const std::vector<std::string>& kernel_names, Extra extra) {
  const size_t tasks = graph.tasks.size();
  for (size_t i = 0; i < spans.size(); ++i) {
    const TaskSpan& s = spans[i];
    if (s.end == 0 || s.task >= tasks) continue;
    const TaskDesc& t = graph.tasks[s.task];
    const bool empty = t.op == kNoOp;
    const uint64_t iteration = i / tasks + 1;
    nlohmann::json args = {{"task", s.task},
                           {"iteration", iteration},
                           {"block", {t.bx, t.by, t.bz}},
                           {"jit", (t.flags & kTaskJit) != 0}};
    if (!empty) {
      args["op"] = t.op;
      args["kernel"] = graph.ops[t.op].kernel;
    }
    extra(args, iteration);
    std::string name =
        empty ? fmt::format("t{} empty", s.task)
        : kernel_names.empty()
            ? fmt::format("t{} k{} [{},{},{}]", s.task, graph.ops[t.op].kernel, t.bx, t.by, t.bz)
            : kernel_names[t.op];
    events.push_back(complete_event(std::move(name), empty ? "empty" : "task", s.worker, s.start,
                                    s.end, origin, std::move(args)));
  }
}

nlohmann::json worker_tracks(const DeviceGraph& graph) {
  nlohmann::json events = nlohmann::json::array();
  for (uint32_t w = 0; w < graph.workers; ++w)
    events.push_back(thread_name(w, fmt::format("worker {}", w)));
  return events;
}

std::string document(nlohmann::json events, const std::string& name) {
  nlohmann::json doc = {{"traceEvents", std::move(events)},
                        {"displayTimeUnit", "ns"},
                        {"otherData", {{"program", name}}}};
  return doc.dump(1) + "\n";
}

}  // namespace

std::string chrome_trace_json(const DeviceGraph& graph, const std::vector<TaskSpan>& spans,
                              const std::string& name) {
  const uint64_t origin = earliest_start(spans, std::numeric_limits<uint64_t>::max());
  nlohmann::json events = worker_tracks(graph);
  task_events(events, graph, spans, origin, {}, [](nlohmann::json&, uint64_t) {});
  return document(std::move(events), name);
}

std::string chrome_trace_json(const DeviceGraph& graph, const std::vector<LaunchTrace>& launches,
                              const std::vector<std::string>& kernel_names,
                              const std::string& name) {
  WEFT_CHECK(kernel_names.size() == graph.ops.size(), "{} kernel names for {} ops",
             kernel_names.size(), graph.ops.size());
  uint64_t origin = std::numeric_limits<uint64_t>::max();
  for (const LaunchTrace& l : launches) origin = earliest_start(l.spans, origin);
  nlohmann::json events = worker_tracks(graph);
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", 0},
                    {"args", {{"name", fmt::format("{} (decode loop on the device)", name)}}}});
  // The launches' and steps' tracks, sorted above the workers'.
  const uint32_t launch_tid = graph.workers, step_tid = graph.workers + 1;
  int sort = -2;
  for (auto [tid, track] : {std::pair{launch_tid, "launches"}, std::pair{step_tid, "steps"}}) {
    events.push_back(thread_name(tid, track));
    events.push_back({{"name", "thread_sort_index"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", tid},
                      {"args", {{"sort_index", sort++}}}});
  }
  const size_t tasks = graph.tasks.size();
  for (size_t l = 0; l < launches.size(); ++l) {
    const LaunchTrace& launch = launches[l];
    task_events(events, graph, launch.spans, origin, kernel_names,
                [&](nlohmann::json& args, uint64_t iteration) {
                  args["launch"] = l;
                  args["step"] = launch.first_step + static_cast<int64_t>(iteration) - 1;
                });
    // Each step's and the launch's extent over its filled spans.
    std::map<int64_t, std::pair<uint64_t, uint64_t>> steps;
    for (size_t i = 0; i < launch.spans.size(); ++i) {
      const TaskSpan& s = launch.spans[i];
      if (s.end == 0) continue;
      auto it =
          steps.try_emplace(launch.first_step + static_cast<int64_t>(i / tasks), s.start, s.end)
              .first;
      it->second = {std::min(it->second.first, s.start), std::max(it->second.second, s.end)};
    }
    if (steps.empty()) continue;
    uint64_t first = std::numeric_limits<uint64_t>::max(), last = 0;
    for (const auto& [step, extent] : steps) {
      events.push_back(complete_event(fmt::format("step {}", step), "step", step_tid, extent.first,
                                      extent.second, origin, {{"launch", l}, {"step", step}}));
      first = std::min(first, extent.first);
      last = std::max(last, extent.second);
    }
    const int64_t a = steps.begin()->first, b = steps.rbegin()->first;
    events.push_back(complete_event(
        a == b ? fmt::format("launch {} (step {})", l, a)
               : fmt::format("launch {} (steps {}-{})", l, a, b),
        "launch", launch_tid, first, last, origin,
        {{"launch", l}, {"first_step", launch.first_step}, {"steps", steps.size()}}));
  }
  return document(std::move(events), name);
}

}  // namespace weft
