// List scheduling of AOT tasks over predicted times, the hybrid JIT region, and the balance report.
#include "mpk/passes/assign.h"

#include <algorithm>

#include "core/error.h"
#include "mpk/memory_runs.h"

namespace weft {

std::vector<double> task_bytes(const TaskGraph& g) {
  std::vector<double> bytes;
  for (const Task& t : g.tasks) {
    if (t.op != kEmptyTask && g.ops[t.op].bytes >= 0) {
      bytes.push_back(static_cast<double>(g.ops[t.op].bytes));
      continue;
    }
    double sum = 0;
    for (const auto* list : {&t.reads, &t.writes})
      for (const Access& a : *list) {
        double v = static_cast<double>(dtype_bytes(g.tensors[a.tensor].dtype));
        for (size_t d = 0; d < a.box.lo.size(); ++d)
          v *= static_cast<double>(a.box.hi[d] - a.box.lo[d]);
        sum += v;
      }
    bytes.push_back(sum);
  }
  return bytes;
}

std::vector<double> task_costs(const TaskGraph& g, const TaskCostModel& model) {
  std::vector<double> cost = task_bytes(g);
  for (double& c : cost) c = model.task_ns + c / model.bytes_per_ns;
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
};

Schedule list_schedule(const TaskGraph& g, int workers) {
  const std::vector<double> cost = task_costs(g), bytes = task_bytes(g);
  EventSides sides = event_sides(g);
  std::vector<double> finish(g.tasks.size(), 0), free_at(workers, 0), load(workers, 0),
      moved(workers, 0);
  // The least loaded worker: least predicted time, then fewest bytes, then lowest index.
  auto lighter = [&](int a, int b) {
    if (load[a] != load[b]) return load[a] < load[b];
    if (moved[a] != moved[b]) return moved[a] < moved[b];
    return a < b;
  };
  Schedule s{std::vector<int>(g.tasks.size(), 0)};
  for (size_t t = 0; t < g.tasks.size(); ++t) {
    double ready = 0;
    for (int p : sides.triggers[g.tasks[t].waits.at(0)]) ready = std::max(ready, finish[p]);
    // The schedulers deal JIT tasks round-robin at run time, to workers that serve them while
    // they wait: estimated to start when ready, on no worker in particular.
    if (g.tasks[t].jit) {
      finish[t] = ready + cost[t];
      continue;
    }
    int best = 0;
    for (int w = 1; w < workers; ++w) {
      const double start = std::max(free_at[w], ready), best_start = std::max(free_at[best], ready);
      if (start < best_start || (start == best_start && lighter(w, best))) best = w;
    }
    finish[t] = std::max(free_at[best], ready) + cost[t];
    free_at[best] = finish[t];
    load[best] += cost[t];
    moved[best] += bytes[t];
    s.worker[t] = best;
  }
  return s;
}

double max_over_mean(const std::vector<double>& v) {
  double sum = 0, most = 0;
  for (double x : v) {
    sum += x;
    most = std::max(most, x);
  }
  return sum > 0 ? most / (sum / static_cast<double>(v.size())) : 1;
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

WorkerBalance worker_balance(const TaskGraph& g) {
  const std::vector<double> cost = task_costs(g), bytes = task_bytes(g);
  WorkerBalance b;
  for (const auto& list : g.worker_lists) {
    b.time_ns.push_back(0);
    b.bytes.push_back(0);
    b.tasks.push_back(static_cast<int64_t>(list.size()));
    for (int t : list) {
      b.time_ns.back() += cost.at(t);
      b.bytes.back() += bytes.at(t);
    }
  }
  b.time_imbalance = max_over_mean(b.time_ns);
  b.bytes_imbalance = max_over_mean(b.bytes);
  return b;
}

}  // namespace weft
