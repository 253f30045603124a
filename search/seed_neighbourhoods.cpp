// A baseline's units (fusions, lone operators), which of them may join, their order, and the
// stitching of the search's answer back into the baseline.
#include "search/seed_neighbourhoods.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <queue>
#include <set>

#include "cost/cost_model.h"

namespace weft {
namespace {

// A baseline's operators grouped as it runs them: each fusion is one unit, each operator it left
// alone another.
struct Units {
  std::vector<std::vector<int>> ops;  // per unit, in program order
  std::vector<int> fusion;            // per unit: its index in the baseline's fusions, or -1
  std::vector<int> unit_of;           // per operator of the base program
};

Units units_of(const BaselineCandidate& b) {
  Units u;
  u.unit_of.assign(b.base.ops.size(), -1);
  for (size_t f = 0; f < b.fused_ops.size(); ++f) {
    std::vector<int> ops = b.fused_ops[f];
    std::sort(ops.begin(), ops.end());
    for (int i : ops) u.unit_of.at(static_cast<size_t>(i)) = static_cast<int>(u.ops.size());
    u.ops.push_back(std::move(ops));
    u.fusion.push_back(static_cast<int>(f));
  }
  for (size_t i = 0; i < b.base.ops.size(); ++i) {
    if (u.unit_of[i] >= 0) continue;
    u.unit_of[i] = static_cast<int>(u.ops.size());
    u.ops.push_back({static_cast<int>(i)});
    u.fusion.push_back(-1);
  }
  return u;
}

// Whether no path leaves the operators `inside` and comes back into them: a walk over the
// outside operators from the inside's consumers must never reach back in.
bool convex(const Graph& g, const std::vector<std::vector<int>>& consumers,
            const std::vector<bool>& inside) {
  std::vector<bool> seen(g.ops.size(), false);
  std::vector<int> stack;
  for (size_t i = 0; i < g.ops.size(); ++i) {
    if (!inside[i]) continue;
    for (ValueId v : g.ops[i].outputs)
      for (int c : consumers[v])
        if (!inside[c] && !seen[c]) {
          seen[c] = true;
          stack.push_back(c);
        }
  }
  while (!stack.empty()) {
    int op = stack.back();
    stack.pop_back();
    for (ValueId v : g.ops[op].outputs)
      for (int c : consumers[v]) {
        if (inside[c]) return false;
        if (!seen[c]) {
          seen[c] = true;
          stack.push_back(c);
        }
      }
  }
  return true;
}

// The units that read from unit `u` or feed it.
std::set<int> adjacent_units(const Graph& g, const std::vector<std::vector<int>>& consumers,
                             const Units& units, int u) {
  std::vector<int> producer = g.producers();
  std::set<int> out;
  for (int op : units.ops[u]) {
    for (ValueId v : g.ops[op].inputs)
      if (producer[v] >= 0) out.insert(units.unit_of[producer[v]]);
    for (ValueId v : g.ops[op].outputs)
      for (int c : consumers[v]) out.insert(units.unit_of[c]);
  }
  out.erase(u);
  return out;
}

// `groups` (op sets of the base program, together all of its operators, acyclic between them) in
// an order where each group's inputs are produced by groups before it; ties by first operator.
std::vector<size_t> topological_order(const Graph& g, const std::vector<std::vector<int>>& groups) {
  std::vector<int> group_of(g.ops.size(), -1);
  for (size_t k = 0; k < groups.size(); ++k)
    for (int op : groups[k]) group_of[op] = static_cast<int>(k);
  std::vector<int> producer = g.producers();
  std::vector<std::set<size_t>> after(groups.size());
  std::vector<int> waiting(groups.size(), 0);
  for (size_t k = 0; k < groups.size(); ++k) {
    std::set<size_t> before;
    for (int op : groups[k])
      for (ValueId v : g.ops[op].inputs)
        if (producer[v] >= 0 && group_of[producer[v]] != static_cast<int>(k))
          before.insert(static_cast<size_t>(group_of[producer[v]]));
    waiting[k] = static_cast<int>(before.size());
    for (size_t b : before) after[b].insert(k);
  }
  using Entry = std::pair<int, size_t>;  // (first operator, group)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
  for (size_t k = 0; k < groups.size(); ++k)
    if (waiting[k] == 0) ready.emplace(groups[k].front(), k);
  std::vector<size_t> order;
  while (!ready.empty()) {
    size_t k = ready.top().second;
    ready.pop();
    order.push_back(k);
    for (size_t n : after[k])
      if (--waiting[n] == 0) ready.emplace(groups[n].front(), n);
  }
  WEFT_CHECK(order.size() == groups.size(), "a baseline's units depend on each other in a cycle");
  return order;
}

// The neighbourhood of baseline `b` whose searched unit joins units `joined`.
SeedNeighbourhood make_neighbourhood(const BaselineCandidate& b, const Units& units,
                                     const std::set<int>& joined, const std::vector<int>& merged,
                                     const Target& target) {
  SeedNeighbourhood n;
  n.rule = b.rule;
  n.base = b.base;
  std::vector<std::vector<int>> groups;
  std::vector<SubProgram> parts;
  std::vector<Graph> kernels;
  for (size_t u = 0; u < units.ops.size(); ++u) {
    if (joined.count(static_cast<int>(u))) {
      const int f = units.fusion[u];
      n.baseline_predicted_s +=
          f >= 0 ? b.fused[f].predicted_s
                 : predict(subprogram_of(b.base, units.ops[u], b.base.name).graph, target).total_s;
      continue;
    }
    groups.push_back(units.ops[u]);
    if (units.fusion[u] < 0) {
      parts.push_back(subprogram_of(b.base, units.ops[u], b.base.name));
      kernels.push_back(parts.back().graph);
      continue;
    }
    const FusedRegion& fused = b.fused[static_cast<size_t>(units.fusion[u])];
    SubProgram part;
    part.ops = units.ops[u];
    part.inputs = fused.operands;
    part.outputs = fused.results;
    parts.push_back(std::move(part));
    kernels.push_back(fused.kernels);
  }
  groups.push_back(merged);
  parts.push_back(subprogram_of(b.base, merged, b.base.name + ".seed"));
  kernels.push_back(parts.back().graph);
  for (size_t k : topological_order(b.base, groups)) {
    if (k + 1 == groups.size()) n.searched = n.units.size();
    n.units.push_back(std::move(parts[k]));
    n.kernels.push_back(std::move(kernels[k]));
  }
  return n;
}

}  // namespace

std::vector<SeedNeighbourhood> seed_neighbourhoods(const std::vector<BaselineCandidate>& baselines,
                                                   const Target& target) {
  std::vector<size_t> order(baselines.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::vector<double> predicted;
  for (const BaselineCandidate& b : baselines)
    predicted.push_back(predict(b.graph, target).total_s);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return predicted[a] < predicted[b]; });
  std::vector<SeedNeighbourhood> out;
  for (size_t i : order) {
    const BaselineCandidate& b = baselines[i];
    if (b.fused.empty()) continue;
    const Units units = units_of(b);
    const std::vector<std::vector<int>> consumers = b.base.consumers();
    std::vector<int> fusions;  // units that are fusions, the slowest first
    for (size_t u = 0; u < units.ops.size(); ++u)
      if (units.fusion[u] >= 0) fusions.push_back(static_cast<int>(u));
    std::stable_sort(fusions.begin(), fusions.end(), [&](int x, int y) {
      return b.fused[units.fusion[x]].predicted_s > b.fused[units.fusion[y]].predicted_s;
    });
    std::set<std::vector<int>> taken;
    for (int u : fusions) {
      std::vector<std::set<int>> candidates{{u}};
      for (int v : adjacent_units(b.base, consumers, units, u)) candidates.push_back({u, v});
      for (const std::set<int>& joined : candidates) {
        std::vector<bool> inside(b.base.ops.size(), false);
        std::vector<int> merged;
        for (int k : joined)
          for (int op : units.ops[k]) {
            inside[op] = true;
            merged.push_back(op);
          }
        std::sort(merged.begin(), merged.end());
        if (merged.size() == b.base.ops.size() || !taken.insert(merged).second) continue;
        if (!convex(b.base, consumers, inside)) continue;
        out.push_back(make_neighbourhood(b, units, joined, merged, target));
      }
    }
  }
  return out;
}

Graph stitch_seed(const SeedNeighbourhood& n, const Graph& searched) {
  std::vector<Graph> replacements = n.kernels;
  replacements.at(n.searched) = searched;
  return stitch(n.base, n.units, replacements);
}

}  // namespace weft
