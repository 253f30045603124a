// Dependency analysis: the pairs of tasks of different operators whose bytes may meet, latest
// first, reduced transitively as they come so that fusion starts from the fewest events.
#include "mpk/passes/deps.h"

#include <algorithm>
#include <bit>
#include <map>
#include <optional>
#include <tuple>

#include "core/error.h"
#include "mpk/memory_runs.h"

namespace weft {

namespace {

constexpr int64_t kMaxRuns = int64_t{1} << 16;

// One access with what the overlap test needs, computed once: its storage, byte span and (on
// first use) byte runs. Comparing accesses pair by pair recomputed them for every pair, which for
// the 0.6B-shaped decode step (12 M conflicting pairs) was most of the compile time.
struct AccessBytes {
  const Access* access;
  const TgTensor* tensor;
  int64_t storage, lo, hi;
  std::optional<std::optional<std::vector<std::pair<int64_t, int64_t>>>> runs;  // lazily

  AccessBytes(const TaskGraph& g, const Access& a)
      : access(&a), tensor(&g.tensors[a.tensor]), storage(storage_of(*tensor)) {
    std::tie(lo, hi) = byte_span(*tensor, a.box);
  }
  const std::optional<std::vector<std::pair<int64_t, int64_t>>>& byte_runs_of() {
    if (!runs) runs = byte_runs(*tensor, access->box, kMaxRuns);
    return *runs;
  }
};

bool overlap(AccessBytes& a, AccessBytes& b) {
  if (a.access->tensor == b.access->tensor) return boxes_intersect(a.access->box, b.access->box);
  if (a.storage != b.storage) return false;
  if (a.access->box.empty() || b.access->box.empty() ||
      std::max(a.lo, b.lo) >= std::min(a.hi, b.hi))
    return false;
  auto &ra = a.byte_runs_of(), &rb = b.byte_runs_of();
  if (!ra || !rb) return true;  // the spans overlap: conservative
  return runs_intersect(*ra, *rb);
}

bool any_overlap(std::vector<AccessBytes>& x, std::vector<AccessBytes>& y) {
  for (AccessBytes& a : x)
    for (AccessBytes& b : y)
      if (overlap(a, b)) return true;
  return false;
}

}  // namespace

bool accesses_overlap(const TaskGraph& g, const Access& a, const Access& b) {
  AccessBytes x(g, a), y(g, b);
  return overlap(x, y);
}

TaskGraph analyze_dependencies(const TaskGraph& graph, DependencyReport* report) {
  TaskGraph g = graph;
  WEFT_CHECK(g.events.empty(), "dependency analysis runs on a decomposed graph");
  const int n = static_cast<int>(g.tasks.size());
  DependencyReport rep;
  // Predecessors in program order: operators are in launch order, so task order is topological.
  // Two accesses share a byte only when both boxes are non-empty, in one storage, with
  // intersecting byte spans; an index of the earlier tasks' spans per storage leaves the exact
  // comparison to the pairs that pass that test (all pairs would be quadratic: 38 M for the
  // 0.6B-shaped decode step).
  std::vector<std::vector<AccessBytes>> reads(n), writes(n);
  for (int t = 0; t < n; ++t) {
    for (const Access& a : g.tasks[t].reads) reads[t].emplace_back(g, a);
    for (const Access& a : g.tasks[t].writes) writes[t].emplace_back(g, a);
  }
  struct Span {
    int task;
    int64_t lo, hi;
  };
  std::map<int64_t, std::vector<Span>> spans;  // by storage
  auto for_each_access = [&](int t, auto&& f) {
    for (auto* list : {&reads[t], &writes[t]})
      for (const AccessBytes& a : *list)
        if (!a.access->box.empty()) f(a);
  };
  // Candidates are taken latest first, with the transitive reduction as they come: a candidate
  // already among the ancestors of a kept predecessor is implied by a path whether or not it
  // conflicts, so it is not compared (the 0.6B-shaped decode step compared 12 M conflicting
  // pairs before; the kept edges are the same, the reduction of a DAG being unique).
  const size_t words = (static_cast<size_t>(n) + 63) / 64;
  std::vector<std::vector<uint64_t>> anc(n, std::vector<uint64_t>(words, 0));
  std::vector<std::vector<int>> kept(n);
  std::vector<uint64_t> candidates(words);
  for (int v = 0; v < n; ++v) {
    std::fill(candidates.begin(), candidates.end(), 0);
    for_each_access(v, [&](const AccessBytes& a) {
      auto it = spans.find(a.storage);
      if (it != spans.end())
        for (const Span& s : it->second)
          if (s.lo < a.hi && a.lo < s.hi) candidates[s.task / 64] |= uint64_t{1} << (s.task % 64);
    });
    for_each_access(v, [&](const AccessBytes& a) { spans[a.storage].push_back({v, a.lo, a.hi}); });
    const Task& tv = g.tasks[v];
    for (size_t w = words; w-- > 0;) {
      // Latest first; a kept edge adds only ancestors before it, so the mask is re-read per bit.
      for (uint64_t bits = candidates[w]; bits != 0;) {
        const int bit = 63 - std::countl_zero(bits);
        bits &= ~(uint64_t{1} << bit);
        const int u = static_cast<int>(w * 64) + bit;
        const Task& tu = g.tasks[u];
        if (tu.op == tv.op) {
          // A library operator's tasks share its work and declare its operands whole (each
          // element is written by one of them); a graph-defined kernel's blocks must not overlap.
          WEFT_CHECK(g.ops[tu.op].library ||
                         !(any_overlap(writes[u], reads[v]) || any_overlap(reads[u], writes[v]) ||
                           any_overlap(writes[u], writes[v])),
                     "blocks {} and {} of kernel {} conflict", u, v, g.ops[tu.op].kernel);
          continue;
        }
        ++rep.candidates;
        if ((anc[v][w] >> bit) & 1) {
          ++rep.implied;
          continue;
        }
        ++rep.compared;
        const bool raw = any_overlap(writes[u], reads[v]), war = any_overlap(reads[u], writes[v]),
                   waw = any_overlap(writes[u], writes[v]);
        rep.raw += raw;
        rep.war += war;
        rep.waw += waw;
        if (!(raw || war || waw)) continue;
        kept[v].push_back(u);
        anc[v][w] |= uint64_t{1} << bit;
        for (size_t x = 0; x < words; ++x) anc[v][x] |= anc[u][x];
      }
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
