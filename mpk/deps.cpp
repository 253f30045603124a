// Dependency analysis: all pairs of tasks of different operators, then a transitive reduction
// so that fusion starts from the fewest events.
#include "mpk/deps.h"

#include <algorithm>

#include "core/error.h"
#include "mpk/memory_runs.h"

namespace weft {

bool accesses_overlap(const TaskGraph& g, const Access& a, const Access& b) {
  if (a.tensor == b.tensor) return boxes_intersect(a.box, b.box);
  const TgTensor &ta = g.tensors[a.tensor], &tb = g.tensors[b.tensor];
  if (storage_of(ta) != storage_of(tb)) return false;
  auto sa = byte_span(ta, a.box), sb = byte_span(tb, b.box);
  if (a.box.empty() || b.box.empty() ||
      std::max(sa.first, sb.first) >= std::min(sa.second, sb.second))
    return false;
  constexpr int64_t kMaxRuns = int64_t{1} << 16;
  auto ra = byte_runs(ta, a.box, kMaxRuns), rb = byte_runs(tb, b.box, kMaxRuns);
  if (!ra || !rb) return true;  // the spans overlap: conservative
  return runs_intersect(*ra, *rb);
}

namespace {

bool any_overlap(const TaskGraph& g, const std::vector<Access>& x, const std::vector<Access>& y) {
  for (const Access& a : x)
    for (const Access& b : y)
      if (accesses_overlap(g, a, b)) return true;
  return false;
}

}  // namespace

TaskGraph analyze_dependencies(const TaskGraph& graph, DependencyReport* report) {
  TaskGraph g = graph;
  WEFT_CHECK(g.events.empty(), "dependency analysis runs on a decomposed graph");
  const int n = static_cast<int>(g.tasks.size());
  DependencyReport rep;
  // Predecessors in program order: operators are in launch order, so task order is topological.
  std::vector<std::vector<int>> preds(n);
  for (int v = 0; v < n; ++v) {
    for (int u = 0; u < v; ++u) {
      const Task &tu = g.tasks[u], &tv = g.tasks[v];
      bool raw = any_overlap(g, tu.writes, tv.reads), war = any_overlap(g, tu.reads, tv.writes),
           waw = any_overlap(g, tu.writes, tv.writes);
      if (tu.op == tv.op) {
        WEFT_CHECK(!(raw || war || waw), "blocks {} and {} of kernel {} conflict", u, v,
                   g.ops[tu.op].kernel);
        continue;
      }
      rep.raw += raw;
      rep.war += war;
      rep.waw += waw;
      if (raw || war || waw) preds[v].push_back(u);
    }
  }
  // Transitive reduction: a predecessor already among the ancestors of a later kept predecessor
  // is implied by a path.
  const size_t words = (static_cast<size_t>(n) + 63) / 64;
  std::vector<std::vector<uint64_t>> anc(n, std::vector<uint64_t>(words, 0));
  std::vector<std::vector<int>> kept(n);
  for (int v = 0; v < n; ++v) {
    for (auto it = preds[v].rbegin(); it != preds[v].rend(); ++it) {
      int u = *it;
      if ((anc[v][u / 64] >> (u % 64)) & 1) continue;
      kept[v].push_back(u);
      anc[v][u / 64] |= uint64_t{1} << (u % 64);
      for (size_t w = 0; w < words; ++w) anc[v][w] |= anc[u][w];
    }
    std::sort(kept[v].begin(), kept[v].end());
  }
  g.events.push_back(Event{EventKind::begin, 1});
  g.events.push_back(Event{EventKind::end, 0});
  std::vector<bool> has_succ(n, false);
  for (int v = 0; v < n; ++v) {
    if (kept[v].empty()) g.tasks[v].waits.push_back(kBeginEvent);
    for (int u : kept[v]) {
      const int e = static_cast<int>(g.events.size());
      g.events.push_back(Event{EventKind::normal, 1});
      g.tasks[u].triggers.push_back(e);
      g.tasks[v].waits.push_back(e);
      has_succ[u] = true;
      ++rep.edges;
    }
  }
  for (int u = 0; u < n; ++u) {
    if (!has_succ[u]) {
      g.tasks[u].triggers.push_back(kEndEvent);
      ++g.events[kEndEvent].need;
    }
    std::sort(g.tasks[u].triggers.begin(), g.tasks[u].triggers.end());
    std::sort(g.tasks[u].waits.begin(), g.tasks[u].waits.end());
  }
  if (report) *report = rep;
  return g;
}

}  // namespace weft
