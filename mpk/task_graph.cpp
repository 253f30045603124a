// Task-graph helpers shared by the passes: boxes, event sides, reachability, counts.
#include "mpk/task_graph.h"

#include <algorithm>

#include "core/error.h"

namespace weft {

bool Box::empty() const {
  for (size_t d = 0; d < lo.size(); ++d)
    if (lo[d] >= hi[d]) return true;
  return false;
}

bool boxes_intersect(const Box& a, const Box& b) {
  WEFT_CHECK(a.lo.size() == b.lo.size(), "boxes of ranks {} and {}", a.lo.size(), b.lo.size());
  if (a.empty() || b.empty()) return false;
  for (size_t d = 0; d < a.lo.size(); ++d)
    if (std::max(a.lo[d], b.lo[d]) >= std::min(a.hi[d], b.hi[d])) return false;
  return true;
}

std::string_view dispatch_name(Dispatch d) {
  switch (d) {
    case Dispatch::aot:
      return "aot";
    case Dispatch::jit:
      return "jit";
    case Dispatch::hybrid:
      return "hybrid";
  }
  return "?";
}

Dispatch dispatch_by_name(std::string_view name) {
  for (Dispatch d : {Dispatch::aot, Dispatch::jit, Dispatch::hybrid})
    if (dispatch_name(d) == name) return d;
  throw UserError(fmt::format("unknown dispatch '{}' (aot, jit or hybrid)", name));
}

std::string_view event_kind_name(EventKind k) {
  switch (k) {
    case EventKind::begin:
      return "begin";
    case EventKind::normal:
      return "normal";
    case EventKind::end:
      return "end";
  }
  return "?";
}

EventSides event_sides(const TaskGraph& g) {
  EventSides s;
  s.triggers.resize(g.events.size());
  s.launches.resize(g.events.size());
  for (size_t t = 0; t < g.tasks.size(); ++t) {
    for (int e : g.tasks[t].triggers) s.triggers.at(e).push_back(static_cast<int>(t));
    for (int e : g.tasks[t].waits) s.launches.at(e).push_back(static_cast<int>(t));
  }
  return s;
}

std::vector<std::vector<int>> task_successors(const TaskGraph& g) {
  EventSides s = event_sides(g);
  std::vector<std::vector<int>> succ(g.tasks.size());
  for (size_t t = 0; t < g.tasks.size(); ++t) {
    for (int e : g.tasks[t].triggers)
      succ[t].insert(succ[t].end(), s.launches[e].begin(), s.launches[e].end());
    std::sort(succ[t].begin(), succ[t].end());
    succ[t].erase(std::unique(succ[t].begin(), succ[t].end()), succ[t].end());
  }
  return succ;
}

std::vector<std::vector<uint64_t>> task_reachability(const TaskGraph& g) {
  const size_t n = g.tasks.size(), words = (n + 63) / 64;
  auto succ = task_successors(g);
  // Kahn's order, then reach sets accumulated in reverse topological order.
  std::vector<int> indeg(n, 0), order;
  for (const auto& s : succ)
    for (int v : s) ++indeg[v];
  for (size_t t = 0; t < n; ++t)
    if (indeg[t] == 0) order.push_back(static_cast<int>(t));
  for (size_t i = 0; i < order.size(); ++i)
    for (int v : succ[order[i]])
      if (--indeg[v] == 0) order.push_back(v);
  WEFT_CHECK(order.size() == n, "the task graph has a cycle ({} of {} tasks ordered)", order.size(),
             n);
  std::vector<std::vector<uint64_t>> reach(n, std::vector<uint64_t>(words, 0));
  for (size_t i = n; i-- > 0;) {
    int u = order[i];
    for (int v : succ[u]) {
      reach[u][v / 64] |= uint64_t{1} << (v % 64);
      for (size_t w = 0; w < words; ++w) reach[u][w] |= reach[v][w];
    }
  }
  return reach;
}

std::vector<std::string> unwritten_inputs(const TaskGraph& g) {
  std::vector<bool> written(g.tensors.size(), false);
  for (const Task& t : g.tasks)
    for (const Access& a : t.writes) written[static_cast<size_t>(a.tensor)] = true;
  std::vector<std::string> names;
  for (size_t i = 0; i < g.tensors.size(); ++i)
    if (g.tensors[i].home == TensorHome::input && !written[i]) names.push_back(g.tensors[i].name);
  return names;
}

TaskGraphStats stats_of(const TaskGraph& g) {
  TaskGraphStats s;
  s.tasks = static_cast<int64_t>(g.tasks.size());
  s.events = static_cast<int64_t>(g.events.size());
  for (const Task& t : g.tasks) {
    s.empty_tasks += t.op == kEmptyTask;
    s.jit_tasks += t.jit;
  }
  return s;
}

}  // namespace weft
