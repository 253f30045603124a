// List scheduling of AOT tasks and the hybrid JIT region.
#include "mpk/assign.h"

#include <algorithm>

#include "core/error.h"
#include "mpk/memory_runs.h"

namespace weft {

std::vector<double> task_costs(const TaskGraph& g) {
  std::vector<double> cost;
  for (const Task& t : g.tasks) {
    double bytes = 0;
    for (const auto* list : {&t.reads, &t.writes})
      for (const Access& a : *list) {
        double v = static_cast<double>(dtype_bytes(g.tensors[a.tensor].dtype));
        for (size_t d = 0; d < a.box.lo.size(); ++d)
          v *= static_cast<double>(a.box.hi[d] - a.box.lo[d]);
        bytes += v;
      }
    cost.push_back(bytes);
  }
  return cost;
}

std::vector<bool> barrier_events(const TaskGraph& g) {
  // Ancestor sets in linear (topological) order: a task's ancestors are its event's triggers and
  // theirs.
  const size_t n = g.tasks.size(), words = (n + 63) / 64;
  EventSides sides = event_sides(g);
  std::vector<std::vector<uint64_t>> anc(n, std::vector<uint64_t>(words, 0));
  auto add = [&](std::vector<uint64_t>& into, int t) {
    into[t / 64] |= uint64_t{1} << (t % 64);
    for (size_t w = 0; w < words; ++w) into[w] |= anc[t][w];
  };
  for (size_t v = 0; v < n; ++v)
    for (int e : g.tasks[v].waits)
      for (int p : sides.triggers[e]) {
        WEFT_CHECK(p < static_cast<int>(v), "barrier analysis needs a linearized graph");
        add(anc[v], p);
      }
  std::vector<bool> barrier(g.events.size(), false);
  for (size_t e = 0; e < g.events.size(); ++e) {
    if (g.events[e].first < 0) continue;
    std::vector<uint64_t> done(words, 0);
    for (int t : sides.triggers[e]) add(done, t);
    bool all = true;
    for (int u = 0; u < g.events[e].first && all; ++u) all = (done[u / 64] >> (u % 64)) & 1;
    barrier[e] = all;
  }
  return barrier;
}

namespace {

struct Schedule {
  std::vector<int> worker;  // per task: the worker the estimate put it on
  std::vector<double> load;
};

Schedule list_schedule(const TaskGraph& g, int workers) {
  auto cost = task_costs(g);
  EventSides sides = event_sides(g);
  std::vector<double> finish(g.tasks.size(), 0), free_at(workers, 0);
  Schedule s{std::vector<int>(g.tasks.size(), 0), std::vector<double>(workers, 0)};
  for (size_t t = 0; t < g.tasks.size(); ++t) {
    double ready = 0;
    for (int p : sides.triggers[g.tasks[t].waits.at(0)]) ready = std::max(ready, finish[p]);
    int best = 0;
    if (g.tasks[t].jit) {
      best = static_cast<int>(std::min_element(s.load.begin(), s.load.end()) - s.load.begin());
    } else {
      for (int w = 1; w < workers; ++w)
        if (std::max(free_at[w], ready) < std::max(free_at[best], ready)) best = w;
    }
    finish[t] = std::max(free_at[best], ready) + cost[t];
    free_at[best] = finish[t];
    s.load[best] += cost[t];
    s.worker[t] = best;
  }
  return s;
}

}  // namespace

TaskGraph assign_workers(const TaskGraph& graph, const AssignOptions& options) {
  if (options.workers < 1)
    throw UserError(fmt::format("{} workers: need at least 1", options.workers));
  TaskGraph g = graph;
  for (const Task& t : g.tasks)
    WEFT_CHECK(t.waits.size() == 1 && t.triggers.size() == 1, "assignment needs normal form");
  g.workers = options.workers;
  g.dispatch = options.dispatch;
  for (Task& t : g.tasks) t.jit = options.dispatch == Dispatch::jit;
  if (options.dispatch == Dispatch::hybrid) {
    auto barrier = barrier_events(g);
    for (Task& t : g.tasks) t.jit = t.op != kEmptyTask && g.ops[t.op].data_dependent;
    // Linear order is topological, so one forward sweep propagates through events.
    for (size_t i = 0; i < g.tasks.size(); ++i) {
      if (!g.tasks[i].jit) continue;
      const int e = g.tasks[i].triggers[0];
      if (g.events[e].first < 0 || barrier[e]) continue;
      for (int v = g.events[e].first; v <= g.events[e].last; ++v) g.tasks[v].jit = true;
    }
  }
  Schedule s = list_schedule(g, options.workers);
  g.worker_lists.assign(options.workers, {});
  for (size_t t = 0; t < g.tasks.size(); ++t)
    if (!g.tasks[t].jit) g.worker_lists[s.worker[t]].push_back(static_cast<int>(t));
  return g;
}

std::vector<double> worker_loads(const TaskGraph& g) {
  auto cost = task_costs(g);
  std::vector<double> load;
  for (const auto& list : g.worker_lists) {
    load.push_back(0);
    for (int t : list) load.back() += cost.at(t);
  }
  return load;
}

}  // namespace weft
