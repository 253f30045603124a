// TASO's backtracking search over a model function's rewrites, and the check before use.
#include "rewrite/model_rewrite.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <queue>
#include <set>
#include <tuple>

#include "model/deduce.h"
#include "rewrite/check_rule.h"
#include "rewrite/model_apply.h"
#include "rewrite/model_cost.h"
#include "rewrite/model_egraph.h"
#include "rewrite/pattern.h"

namespace weft {

namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
}

uint64_t attrs_hash(const MAttrs& attrs) {
  const std::hash<std::string> hs;
  uint64_t h = 0;
  for (const auto& [name, value] : attrs) {
    h = mix(h, hs(name));
    if (const auto* e = std::get_if<SymExpr>(&value))
      h = mix(h, e->hash());
    else if (const auto* r = std::get_if<Rational>(&value))
      h = mix(h, hs(r->str()));
    else
      for (const SymExpr& x : std::get<std::vector<SymExpr>>(value)) h = mix(h, x.hash());
  }
  return h;
}

// A hash of what `f` computes, blind to the names of its bindings (a rewrite reached along two
// orders of the same steps names its new values differently).
uint64_t structure_hash(const Function& f) {
  std::map<std::string, uint64_t> h;
  const std::hash<std::string> hs;
  for (const Param& p : f.params) h[p.name] = hs("param " + p.name);
  std::vector<uint64_t> all;
  for (const Block& blk : f.blocks)
    for (const Binding& b : blk.bindings) {
      uint64_t v =
          mix(mix(static_cast<uint64_t>(b.call.kind), hs(b.call.callee)), attrs_hash(b.call.attrs));
      for (const std::string& a : reads_of(b.call)) {
        auto it = h.find(a);
        v = mix(v, it == h.end() ? hs(a) : it->second);
      }
      h[b.var] = v;
      all.push_back(v);
    }
  std::sort(all.begin(), all.end());
  uint64_t out = h.count(f.result) ? h.at(f.result) : hs(f.result);
  for (uint64_t v : all) out = mix(out, v);
  return out;
}

struct Candidate {
  double cost = 0;
  int64_t order = 0;  // ties: the earlier graph first (deterministic)
  Function function;
  std::map<std::string, std::string> renamed;
  std::vector<RewriteStep> steps;
};
struct Later {
  bool operator()(const std::shared_ptr<Candidate>& a, const std::shared_ptr<Candidate>& b) const {
    return a->cost != b->cost ? a->cost > b->cost : a->order > b->order;
  }
};

// The graph a search would use, before its check.
struct Found {
  Function function;
  double cost = 0;
  std::map<std::string, std::string> renamed;
  std::vector<RewriteStep> steps;
  bool changed = false;
};

Found backtrack(const Function& f, const std::vector<RuleDirection>& dirs,
                const ModelRewriteOptions& options, const Budget& budget, SymProver& prover,
                BaseVerdicts& holds_with_base, ModelCost& cost, FunctionRewrite& rep) {
  const auto t0 = std::chrono::steady_clock::now();
  auto start = std::make_shared<Candidate>();
  start->function = f;
  start->cost = rep.before_s;
  std::shared_ptr<Candidate> best = start;
  std::priority_queue<std::shared_ptr<Candidate>, std::vector<std::shared_ptr<Candidate>>, Later>
      queue;
  queue.push(start);
  std::set<uint64_t> seen = {structure_hash(f)};
  int64_t order = 0;
  int fresh = 0;
  auto last_report = t0;
  while (!queue.empty() && rep.stop == StopReason::complete) {
    if (options.progress &&
        std::chrono::steady_clock::now() - last_report > std::chrono::seconds(2)) {
      last_report = std::chrono::steady_clock::now();
      options.progress(
          fmt::format("rewrite: fn {}: {} graphs, best {:.2f} us predicted (from {:.2f})", f.name,
                      rep.graphs, best->cost * 1e6, rep.before_s * 1e6));
    }
    std::shared_ptr<Candidate> cur = queue.top();
    queue.pop();
    if (cur->cost > options.alpha * best->cost) continue;
    const FunctionIndex index = index_function(cur->function);
    for (const RuleDirection& d : dirs) {
      if (budget.left_s() <= 0) rep.stop = StopReason::time_budget;
      if (rep.stop != StopReason::complete) break;
      for (const RewriteMatch& m : find_matches(cur->function, index, d.from, prover)) {
        auto applied = apply_match(cur->function, index, m, d.to, prover, fresh);
        if (!applied || !seen.insert(structure_hash(applied->function)).second) continue;
        // The rule read with another constant holds or not wherever it applies.
        if (m.base && !holds_with_base.holds(*d.source, *m.base, options.seed)) continue;
        if (options.state_budget > 0 && rep.graphs >= options.state_budget) {
          rep.stop = StopReason::state_budget;
          break;
        }
        ++rep.graphs;
        auto next = std::make_shared<Candidate>();
        next->cost = cost.function_s(applied->function);
        next->order = ++order;
        next->function = std::move(applied->function);
        next->renamed = compose_renames(cur->renamed, applied->renamed);
        next->steps = cur->steps;
        const Binding& first = cur->function.blocks[static_cast<size_t>(m.block)]
                                   .bindings[static_cast<size_t>(m.ops.front())];
        next->steps.push_back({d.rule, d.reverse, first.var});
        if (next->cost < best->cost * (1 - 1e-9)) best = next;
        if (next->cost <= options.alpha * best->cost) queue.push(next);
      }
    }
  }
  return {best->function, best->cost, best->renamed, best->steps, best != start};
}

Found saturate(const Function& f, const std::vector<RuleDirection>& dirs,
               const ModelRewriteOptions& options, const Budget& budget, SymProver& prover,
               BaseVerdicts& holds_with_base, ModelCost& cost, FunctionRewrite& rep) {
  EGraphRewrite e = egraph_rewrite_function(f, dirs, cost, options.egraph, budget, prover,
                                            holds_with_base, options.seed, options.progress);
  rep.graphs = e.nodes;
  rep.classes = e.classes;
  rep.iterations = e.iterations;
  rep.stop = e.stop;
  const double c = cost.function_s(e.function);
  const bool changed = c < rep.before_s * (1 - 1e-9);
  return {std::move(e.function), c, std::move(e.renamed), std::move(e.steps), changed};
}

FunctionRewrite search_function(const Function& f, const std::vector<RuleDirection>& dirs,
                                const ModelRewriteOptions& options, const Budget& budget,
                                SymProver& prover, BaseVerdicts& holds_with_base,
                                Function& best_out) {
  const auto t0 = std::chrono::steady_clock::now();
  FunctionRewrite rep;
  rep.function = f.name;
  rep.mode = options.mode;
  std::set<std::string> constants;
  for (const Param& p : f.params)
    if (options.constants.count(p.name)) constants.insert(p.name);
  ModelCost cost(target_by_name(options.target),
                 representative_binding(f, options.at, options.fallback_size), constants);
  rep.before_s = cost.function_s(f);
  rep.kernels_before = cost.kernels(f);
  const Found best = options.mode == RewriteMode::egraph
                         ? saturate(f, dirs, options, budget, prover, holds_with_base, cost, rep)
                         : backtrack(f, dirs, options, budget, prover, holds_with_base, cost, rep);
  rep.after_s = rep.before_s;
  rep.kernels_after = rep.kernels_before;
  best_out = f;
  if (best.changed) {
    rep.check = check_rewritten_function(f, best.function, best.renamed, cost.at(), options.seed);
    if (rep.check.verdict == Verdict::equivalent) {
      best_out = best.function;
      rep.used = true;
      rep.steps = best.steps;
      rep.after_s = best.cost;
      rep.kernels_after = cost.kernels(best.function);
    } else {
      rep.rejected = fmt::format("the finite-field check failed ({}): {}",
                                 verdict_name(rep.check.verdict), rep.check.message);
    }
  }
  rep.search_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

}  // namespace

const char* rewrite_mode_name(RewriteMode mode) {
  switch (mode) {
    case RewriteMode::none:
      return "none";
    case RewriteMode::backtrack:
      return "backtrack";
    case RewriteMode::egraph:
      return "egraph";
  }
  return "?";
}

RewriteMode rewrite_mode_from_name(const std::string& name) {
  if (name == "none") return RewriteMode::none;
  if (name == "backtrack") return RewriteMode::backtrack;
  if (name == "egraph") return RewriteMode::egraph;
  throw UserError(
      {}, fmt::format("unknown rewrite mode '{}': expected none, backtrack or egraph", name));
}

int ModelRewriteResult::rewrites() const {
  int n = 0;
  for (const FunctionRewrite& f : functions) n += static_cast<int>(f.steps.size());
  return n;
}

ModelRewriteResult rewrite_model(const Module& module, const std::vector<Rule>& rules,
                                 const ModelRewriteOptions& options, SymProver& prover) {
  const auto t0 = std::chrono::steady_clock::now();
  ModelRewriteResult out;
  out.module = module;
  if (options.mode == RewriteMode::none) return out;
  target_by_name(options.target);  // an unknown target is the caller's error, before any work
  const std::vector<RuleDirection> dirs = rule_directions(rules);
  const Budget budget(Budget::Limits{options.time_budget_s, 0, 0});
  const size_t n = module.functions.size();
  BaseVerdicts holds_with_base;
  for (size_t i = 0; i < n; ++i) {
    const Function& f = module.functions[i];
    Function best;
    FunctionRewrite rep =
        search_function(f, dirs, options, budget.share(static_cast<int>(n - i), 0.05), prover,
                        holds_with_base, best);
    if (rep.used) {
      Module trial = out.module;
      trial.functions[i] = best;
      try {
        check_module(trial, prover);
        out.module = std::move(trial);
      } catch (const UserError& e) {
        rep.rejected = fmt::format("the rewritten function does not deduce: {}", e.message());
        rep.used = false;
        rep.steps.clear();
        rep.after_s = rep.before_s;
        rep.kernels_after = rep.kernels_before;
      }
    }
    out.stop = worse_stop(out.stop, rep.stop);
    if (options.progress)
      options.progress(fmt::format("rewrite: fn {}: {} rewrite(s), {} {}, {:.1f} s ({})", f.name,
                                   rep.steps.size(), rep.graphs,
                                   rep.mode == RewriteMode::egraph ? "e-nodes" : "graphs",
                                   rep.search_s, stop_reason_name(rep.stop)));
    out.functions.push_back(std::move(rep));
  }
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

std::string rewrite_summary(const ModelRewriteResult& result) {
  std::string out;
  for (const FunctionRewrite& f : result.functions) {
    std::vector<std::string> steps;
    for (const RewriteStep& s : f.steps)
      steps.push_back(fmt::format("rule {}{} at {}", s.rule, s.reverse ? " reversed" : "", s.at));
    out += fmt::format(
        "fn {}: {} rewrite(s){}, {} -> {} kernels, {:.2f} -> {:.2f} us predicted, "
        "{}, {}",
        f.function, f.steps.size(),
        steps.empty() ? "" : fmt::format(" ({})", fmt::join(steps, ", ")), f.kernels_before,
        f.kernels_after, f.before_s * 1e6, f.after_s * 1e6,
        f.mode == RewriteMode::egraph ? fmt::format("{} e-nodes in {} classes, {} iteration(s)",
                                                    f.graphs, f.classes, f.iterations)
                                      : fmt::format("{} graphs", f.graphs),
        stop_reason_name(f.stop));
    if (f.used)
      out += fmt::format(", checked by finite field (bound 2^{:.0f})",
                         f.check.bound > 0 ? std::log2(f.check.bound) : -1000.0);
    if (!f.rejected.empty()) out += ", not used: " + f.rejected;
    out += "\n";
  }
  return out;
}

}  // namespace weft
