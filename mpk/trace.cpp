// Chrome trace-event JSON from protocol spans (nlohmann::json writes it).
#include "mpk/trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

namespace weft {

std::string chrome_trace_json(const DeviceGraph& graph, const std::vector<TaskSpan>& spans,
                              const std::string& name) {
  uint64_t origin = std::numeric_limits<uint64_t>::max();
  for (const TaskSpan& s : spans)
    if (s.end != 0) origin = std::min(origin, s.start);
  nlohmann::json events = nlohmann::json::array();
  for (uint32_t w = 0; w < graph.workers; ++w)
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", w},
                      {"args", {{"name", fmt::format("worker {}", w)}}}});
  const size_t tasks = graph.tasks.size();
  for (size_t i = 0; i < spans.size(); ++i) {
    const TaskSpan& s = spans[i];
    if (s.end == 0 || s.task >= tasks) continue;
    const TaskDesc& t = graph.tasks[s.task];
    const bool empty = t.op == kNoOp;
    nlohmann::json args = {{"task", s.task},
                           {"iteration", i / tasks + 1},
                           {"block", {t.bx, t.by, t.bz}},
                           {"jit", (t.flags & kTaskJit) != 0}};
    if (!empty) {
      args["op"] = t.op;
      args["kernel"] = graph.ops[t.op].kernel;
    }
    events.push_back({{"name", empty ? fmt::format("t{} empty", s.task)
                                     : fmt::format("t{} k{} [{},{},{}]", s.task,
                                                   graph.ops[t.op].kernel, t.bx, t.by, t.bz)},
                      {"cat", empty ? "empty" : "task"},
                      {"ph", "X"},
                      {"pid", 0},
                      {"tid", s.worker},
                      {"ts", static_cast<double>(s.start - origin) / 1e3},
                      {"dur", static_cast<double>(s.end - s.start) / 1e3},
                      {"args", std::move(args)}});
  }
  nlohmann::json doc = {{"traceEvents", std::move(events)},
                        {"displayTimeUnit", "ns"},
                        {"otherData", {{"program", name}}}};
  return doc.dump(1) + "\n";
}

}  // namespace weft
