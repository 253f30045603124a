// The baseline rules: regions to fuse, the row-scale rewrite, and the greedy choice of fusions.
#include "search/baselines.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <set>

#include "cost/cost_model.h"
#include "ir/printer.h"

namespace weft {
namespace {

bool pointwise(const Op& op) {
  return is_elementwise(op.kind);
}

// Dataflow facts of a kernel graph the rules share.
struct Flow {
  const Graph& g;
  std::vector<int> producer;                // per value: its op, -1 for inputs
  std::vector<std::vector<int>> consumers;  // per value
  std::vector<std::vector<bool>> reaches;   // reaches[a][b]: a path from op a to op b

  explicit Flow(const Graph& graph)
      : g(graph), producer(graph.producers()), consumers(graph.consumers()) {
    size_t n = g.ops.size();
    reaches.assign(n, std::vector<bool>(n, false));
    for (size_t i = n; i-- > 0;)
      for (ValueId v : g.ops[i].outputs)
        for (int c : consumers[v]) {
          reaches[i][c] = true;
          for (size_t k = 0; k < n; ++k)
            if (reaches[c][k]) reaches[i][k] = true;
        }
  }

  bool is_output(ValueId v) const {
    return std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end();
  }

  // No path leaves the region and comes back into it.
  bool convex(const std::vector<int>& region) const {
    std::vector<bool> in(g.ops.size(), false);
    for (int i : region) in[i] = true;
    for (size_t o = 0; o < g.ops.size(); ++o) {
      if (in[o]) continue;
      bool from = false, to = false;
      for (int i : region) {
        from |= reaches[i][o];
        to |= reaches[o][i];
      }
      if (from && to) return false;
    }
    return true;
  }

  // Every use of op p's results is inside the region (so fusing p adds no kernel result).
  bool only_used_in(int p, const std::vector<bool>& in) const {
    for (ValueId v : g.ops[p].outputs) {
      if (is_output(v)) return false;
      for (int c : consumers[v])
        if (!in[c]) return false;
    }
    return true;
  }

  // Adds the producers of the region's operands that `admit` accepts and whose results only the
  // region reads, transitively.
  void grow_upstream(std::vector<bool>& in, const std::function<bool(const Op&)>& admit) const {
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t i = g.ops.size(); i-- > 0;) {
        if (!in[i]) continue;
        for (ValueId v : g.ops[i].inputs) {
          int p = producer[v];
          if (p < 0 || in[p] || !admit(g.ops[p]) || !only_used_in(p, in)) continue;
          in[p] = true;
          changed = true;
        }
      }
    }
  }

  // Adds elementwise operators reading the region's results, in program order, while the region
  // stays convex.
  void grow_downstream(std::vector<bool>& in) const {
    for (size_t i = 0; i < g.ops.size(); ++i) {
      if (in[i] || !pointwise(g.ops[i])) continue;
      bool reads_region = false;
      for (ValueId v : g.ops[i].inputs) reads_region |= producer[v] >= 0 && in[producer[v]];
      if (!reads_region) continue;
      in[i] = true;
      if (!convex(indices(in))) in[i] = false;
    }
  }

  static std::vector<int> indices(const std::vector<bool>& in) {
    std::vector<int> out;
    for (size_t i = 0; i < in.size(); ++i)
      if (in[i]) out.push_back(static_cast<int>(i));
    return out;
  }
};

// Rule "chains": connected groups of elementwise operators and reductions.
std::vector<std::vector<int>> chain_regions(const Flow& f) {
  const Graph& g = f.g;
  std::vector<int> group(g.ops.size(), -1);
  std::vector<std::vector<int>> regions;
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const Op& op = g.ops[i];
    if (!region_runs(op) || op.kind == OpKind::matmul || group[i] >= 0) continue;
    // Flood fill over producer and consumer edges between such operators.
    std::vector<int> region, work{static_cast<int>(i)};
    group[i] = static_cast<int>(regions.size());
    while (!work.empty()) {
      int o = work.back();
      work.pop_back();
      region.push_back(o);
      std::vector<int> next;
      for (ValueId v : g.ops[o].inputs)
        if (f.producer[v] >= 0) next.push_back(f.producer[v]);
      for (ValueId v : g.ops[o].outputs)
        for (int c : f.consumers[v]) next.push_back(c);
      for (int n : next)
        if (group[n] < 0 && region_runs(g.ops[n]) && g.ops[n].kind != OpKind::matmul) {
          group[n] = group[i];
          work.push_back(n);
        }
    }
    std::sort(region.begin(), region.end());
    regions.push_back(region);
  }
  std::vector<std::vector<int>> out;
  for (auto& r : regions)
    if (r.size() >= 2 && f.convex(r)) out.push_back(std::move(r));
  return out;
}

// Rule "matmul-epilogues": each matmul with its elementwise prologues (operators computing its
// operands that nothing else reads), its elementwise epilogue, and both.
std::vector<std::vector<int>> epilogue_regions(const Flow& f) {
  const Graph& g = f.g;
  std::vector<std::vector<int>> out;
  for (size_t m = 0; m < g.ops.size(); ++m) {
    if (g.ops[m].kind != OpKind::matmul) continue;
    std::vector<bool> pro(g.ops.size(), false), epi(g.ops.size(), false);
    pro[m] = epi[m] = true;
    f.grow_upstream(pro, pointwise);
    f.grow_downstream(epi);
    std::vector<bool> both = pro;
    for (size_t i = 0; i < g.ops.size(); ++i) both[i] = both[i] || epi[i];
    for (const auto& in : {both, epi, pro}) {
      std::vector<int> r = Flow::indices(in);
      if (r.size() >= 2 && f.convex(r) && std::find(out.begin(), out.end(), r) == out.end())
        out.push_back(r);
    }
  }
  return out;
}

// Rule "matmul-closures": each matmul with its epilogue and everything upstream that only it
// reads (elementwise operators and reductions; with and without earlier matmuls). After
// hoist_row_scales this puts a normalisation's reduction in the matmul's kernel, and attention's
// softmax with both its matmuls.
std::vector<std::vector<int>> closure_regions(const Flow& f) {
  const Graph& g = f.g;
  std::vector<std::vector<int>> out;
  for (size_t m = 0; m < g.ops.size(); ++m) {
    if (g.ops[m].kind != OpKind::matmul) continue;
    for (bool matmuls : {false, true}) {
      std::vector<bool> in(g.ops.size(), false);
      in[m] = true;
      f.grow_downstream(in);
      f.grow_upstream(in, [matmuls](const Op& op) {
        return region_runs(op) && (matmuls || op.kind != OpKind::matmul);
      });
      std::vector<int> r = Flow::indices(in);
      if (r.size() >= 2 && f.convex(r) && std::find(out.begin(), out.end(), r) == out.end())
        out.push_back(r);
    }
  }
  return out;
}

using RegionRule = std::vector<std::vector<int>> (*)(const Flow&);

struct RuleEntry {
  BaselineRule info;
  RegionRule regions;
};

const std::vector<RuleEntry>& rule_table() {
  static const std::vector<RuleEntry> table = {
      {{"chains", "connected elementwise operators and reductions as one kernel"}, chain_regions},
      {{"matmul-epilogues",
        "a matmul with the elementwise operators computing its operands and consuming its result"},
       epilogue_regions},
      {{"matmul-closures",
        "a matmul with its epilogue and every operator upstream that only it reads (after "
        "hoist-row-scales: a normalisation in the matmul's kernel)"},
       closure_regions},
  };
  return table;
}

struct Fusion {
  std::vector<int> ops;
  FusedRegion fused;
  double saving = 0;  // predicted: the operators as library kernels minus the fused kernel
};

// `base` with each fusion's operators replaced by its kernels; nullopt when the fusions together
// would form a cycle.
std::optional<Graph> assemble(const Graph& base, const std::vector<const Fusion*>& fusions) {
  std::vector<int> unit(base.ops.size(), -1);
  for (size_t k = 0; k < fusions.size(); ++k)
    for (int i : fusions[k]->ops) unit[i] = static_cast<int>(k);
  GraphBuilder kb(Level::kernel, base.name);
  std::vector<ValueId> map(base.values.size(), -1);
  for (ValueId v : base.inputs) map[v] = kb.add_input(base.value(v).name, base.type(v));
  std::vector<bool> done(base.ops.size(), false), fusion_done(fusions.size(), false);
  auto ready = [&](const std::vector<ValueId>& values) {
    for (ValueId v : values)
      if (map[v] < 0) return false;
    return true;
  };
  auto mapped = [&](const std::vector<ValueId>& values) {
    std::vector<ValueId> out;
    for (ValueId v : values) out.push_back(map[v]);
    return out;
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t i = 0; i < base.ops.size(); ++i) {
      if (done[i]) continue;
      const Op& op = base.ops[i];
      if (unit[i] < 0) {
        if (!ready(op.inputs)) continue;
        std::vector<std::string> names;
        for (ValueId v : op.outputs) names.push_back(base.value(v).name);
        std::vector<ValueId> outs =
            op.body ? kb.add_nested(op.kind, mapped(op.inputs), *op.body, names, {}, op.stage)
                    : kb.add_op(op.kind, mapped(op.inputs), op.attrs, names, {}, op.stage);
        for (size_t k = 0; k < outs.size(); ++k) map[op.outputs[k]] = outs[k];
        done[i] = progress = true;
        continue;
      }
      const Fusion& f = *fusions[static_cast<size_t>(unit[i])];
      if (!ready(f.fused.operands)) continue;
      // The region's kernel graph, inlined: its names are the program's results and values
      // fresh in the program (search/fuse_region.h).
      const Graph& kg = f.fused.kernels;
      std::vector<ValueId> inner(kg.values.size(), -1);
      for (size_t k = 0; k < kg.inputs.size(); ++k) inner[kg.inputs[k]] = map[f.fused.operands[k]];
      for (const Op& op : kg.ops) {
        std::vector<ValueId> ins;
        for (ValueId v : op.inputs) ins.push_back(inner[v]);
        std::vector<std::string> names;
        for (ValueId v : op.outputs) names.push_back(kg.value(v).name);
        std::vector<ValueId> outs = op.body
                                        ? kb.add_nested(op.kind, ins, *op.body, names, {}, op.stage)
                                        : kb.add_op(op.kind, ins, op.attrs, names, {}, op.stage);
        for (size_t k = 0; k < outs.size(); ++k) inner[op.outputs[k]] = outs[k];
      }
      for (size_t k = 0; k < f.fused.results.size(); ++k)
        map[f.fused.results[k]] = inner[kg.outputs[k]];
      for (int o : f.ops) done[o] = true;
      progress = true;
    }
  }
  if (std::find(done.begin(), done.end(), false) != done.end()) return std::nullopt;
  for (ValueId v : base.outputs) kb.add_output(map[v]);
  return std::move(kb).finish();
}

struct Choice {
  Graph graph;
  std::vector<const Fusion*> picked;
};

// The fusions worth taking, greedily by predicted saving: disjoint, and together acyclic.
std::optional<Choice> choose(const Graph& base, std::vector<const Fusion*> fusions) {
  std::stable_sort(fusions.begin(), fusions.end(),
                   [](const Fusion* a, const Fusion* b) { return a->saving > b->saving; });
  std::vector<const Fusion*> picked;
  std::vector<bool> taken(base.ops.size(), false);
  std::optional<Choice> best;
  for (const Fusion* f : fusions) {
    if (f->saving <= 0) break;
    bool overlaps = false;
    for (int i : f->ops) overlaps |= taken[i];
    if (overlaps) continue;
    picked.push_back(f);
    std::optional<Graph> g = assemble(base, picked);
    if (!g) {
      picked.pop_back();
      continue;
    }
    for (int i : f->ops) taken[i] = true;
    best = Choice{std::move(*g), picked};
  }
  return best;
}

// Operator kinds hoist_row_scales moves past a matmul: x / r and x * r.
bool row_scale(OpKind k) {
  return k == OpKind::div || k == OpKind::mul;
}

}  // namespace

const std::vector<BaselineRule>& baseline_rules() {
  static const std::vector<BaselineRule> rules = [] {
    std::vector<BaselineRule> r{{"input", "the input program: one library kernel per operator"}};
    for (const RuleEntry& e : rule_table()) r.push_back(e.info);
    return r;
  }();
  return rules;
}

std::vector<std::vector<int>> baseline_regions(const Graph& program, const std::string& rule) {
  Flow flow(program);
  for (const RuleEntry& e : rule_table())
    if (e.info.name == rule) return e.regions(flow);
  return {};
}

Graph hoist_row_scales(const Graph& program) {
  Graph g = program;
  // One rewrite at a time, until none applies (a hoisted scale may expose another).
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<int> producer = g.producers();
    std::vector<std::vector<int>> consumers = g.consumers();
    for (size_t m = 0; m < g.ops.size() && !changed; ++m) {
      const Op& mm = g.ops[m];
      if (mm.kind != OpKind::matmul) continue;
      size_t rank = g.type(mm.outputs[0]).shape.size();
      for (size_t side = 0; side < 2 && !changed; ++side) {
        ValueId operand = mm.inputs[side];
        int p = producer[operand];
        if (p < 0 || !row_scale(g.ops[p].kind) || consumers[operand].size() != 1) continue;
        if (std::find(g.outputs.begin(), g.outputs.end(), operand) != g.outputs.end()) continue;
        // The scale is the operand (of the mul or div) constant along the contraction: the last
        // dim of the matmul's first operand, the second-to-last of its second.
        size_t contraction = side == 0 ? rank - 1 : rank - 2;
        const Op& sc = g.ops[p];
        for (size_t which = 0; which < 2 && !changed; ++which) {
          if (sc.kind == OpKind::div && which == 0) continue;  // r / x is not a scale of x
          ValueId scale = sc.inputs[which], x = sc.inputs[1 - which];
          const Shape& ss = g.type(scale).shape;
          if (ss[contraction] != 1 || g.type(x).shape != g.type(operand).shape) continue;
          // A row scale of the first operand ([.., m, 1]) scales the result's rows; a column
          // scale of the second ([.., 1, n]) its columns: both broadcast against the result.
          GraphBuilder b(Level::kernel, g.name);
          std::vector<ValueId> map(g.values.size(), -1);
          for (ValueId v : g.inputs) map[v] = b.add_input(g.value(v).name, g.type(v));
          std::set<std::string> names;
          for (const Value& v : g.values) names.insert(v.name);
          std::string fresh;
          for (int k = 1; fresh.empty() || names.count(fresh); ++k)
            fresh = fmt::format("{}.{}", g.value(mm.outputs[0]).name, k);
          for (size_t i = 0; i < g.ops.size(); ++i) {
            const Op& op = g.ops[i];
            if (static_cast<int>(i) == p) continue;
            std::vector<ValueId> ins;
            for (ValueId v : op.inputs) ins.push_back(map[v]);
            std::vector<std::string> outs;
            for (ValueId v : op.outputs) outs.push_back(g.value(v).name);
            if (i == m) {
              ins[side] = map[x];
              ValueId t = b.add(OpKind::matmul, ins, {}, fresh);
              map[op.outputs[0]] = b.add(sc.kind, {t, map[scale]}, {}, outs[0]);
              continue;
            }
            std::vector<ValueId> res =
                op.body ? b.add_nested(op.kind, ins, *op.body, outs, {}, op.stage)
                        : b.add_op(op.kind, ins, op.attrs, outs, {}, op.stage);
            for (size_t k = 0; k < res.size(); ++k) map[op.outputs[k]] = res[k];
          }
          for (ValueId v : g.outputs) b.add_output(map[v]);
          g = std::move(b).finish();
          changed = true;
        }
      }
    }
  }
  return g;
}

FuseOptions fuse_options(const SearchConfig& config) {
  FuseOptions fuse;
  fuse.max_blocks = config.max_blocks;
  fuse.max_loop = config.max_loop;
  fuse.max_grid_dims = config.max_grid_dims;
  fuse.threads = config.threads_per_block.empty() ? 128 : config.threads_per_block.front();
  return fuse;
}

std::vector<BaselineCandidate> baseline_candidates(const Graph& program, const Target& target,
                                                   const FuseOptions& options) {
  std::vector<BaselineCandidate> out{{"input", program, {}, {}, {}}};
  std::set<std::string> seen{print_graph(program, false)};
  auto add = [&](std::string rule, const Graph& base, std::optional<Choice> c) {
    if (!c || !seen.insert(print_graph(c->graph, false)).second) return;
    BaselineCandidate b{std::move(rule), std::move(c->graph), base, {}, {}};
    for (const Fusion* f : c->picked) {
      b.fused_ops.push_back(f->ops);
      b.fused.push_back(f->fused);
    }
    out.push_back(std::move(b));
  };
  Graph hoisted = hoist_row_scales(program);
  std::vector<std::pair<std::string, const Graph*>> bases{{"", &program}};
  if (!(hoisted == program)) bases.emplace_back("hoist-row-scales+", &hoisted);
  for (const auto& [prefix, base] : bases) {
    Flow flow(*base);
    CostReport library = predict(*base, target);
    // The predicted time of each operator as a library kernel (kernel-graph order is op order).
    auto library_s = [&](const std::vector<int>& ops) {
      double s = 0;
      for (int i : ops)
        s += static_cast<size_t>(i) < library.kernels.size() ? library.kernels[i].time_s : 0;
      return s;
    };
    std::vector<std::vector<Fusion>> per_rule;
    std::vector<const Fusion*> all;
    for (const RuleEntry& e : rule_table()) {
      per_rule.emplace_back();
      for (std::vector<int>& r : e.regions(flow)) {
        std::optional<FusedRegion> fused = fuse_region(*base, r, target, options);
        if (!fused) continue;
        double saving = library_s(r) - fused->predicted_s;
        per_rule.back().push_back(Fusion{std::move(r), std::move(*fused), saving});
      }
    }
    for (size_t k = 0; k < per_rule.size(); ++k) {
      std::vector<const Fusion*> mine;
      for (const Fusion& f : per_rule[k]) {
        mine.push_back(&f);
        all.push_back(&f);
      }
      add(prefix + rule_table()[k].info.name, *base, choose(*base, mine));
    }
    add(prefix + "all", *base, choose(*base, all));
  }
  return out;
}

}  // namespace weft
