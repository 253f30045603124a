// E-graph with equality saturation: hash-consed e-nodes, union-find, batched rule application.
#include "absexpr/egraph.h"

#include <algorithm>
#include <chrono>
#include <tuple>

#include "core/error.h"

namespace weft {

size_t ENodeHash::operator()(const ENode& n) const {
  uint64_t h = static_cast<uint64_t>(n.op) * 0x9E3779B97F4A7C15ull;
  h ^= static_cast<uint64_t>(n.k) + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
  h ^= static_cast<uint64_t>(n.a) + 0x85EBCA77C2B2AE63ull + (h << 6) + (h >> 2);
  h ^= static_cast<uint64_t>(n.b) + 0xC2B2AE3D27D4EB4Full + (h << 6) + (h >> 2);
  return static_cast<size_t>(h);
}

const char* saturation_stop_name(SaturationStop r) {
  switch (r) {
    case SaturationStop::saturated:
      return "saturated";
    case SaturationStop::node_limit:
      return "node limit";
    case SaturationStop::time_limit:
      return "time limit";
    case SaturationStop::iteration_limit:
      return "iteration limit";
    case SaturationStop::size_limit:
      return "reduction-size limit";
  }
  return "?";
}

std::vector<Rewrite> compile_axioms(const std::vector<Axiom>& axioms) {
  std::vector<Rewrite> out;
  for (const Axiom& ax : axioms) {
    out.push_back(Rewrite{ax.name, parse_rule_patterns(ax.lhs, ax.rhs)});
    if (ax.both_ways) out.push_back(Rewrite{ax.name + "'", parse_rule_patterns(ax.rhs, ax.lhs)});
  }
  for (const Rewrite& r : out) {
    WEFT_CHECK(!r.pat.lhs.nodes[static_cast<size_t>(r.pat.lhs.root)].is_var,
               "rule {} has a bare variable as its left side", r.name);
    WEFT_CHECK(r.pat.num_vars <= EGraph::kMaxVars && r.pat.num_size_vars <= EGraph::kMaxSizeVars,
               "rule {} has too many variables", r.name);
  }
  return out;
}

ClassId EGraph::find(ClassId c) const {
  while (parent_[c] != c) c = parent_[c];
  return c;
}

ENode EGraph::canonical(ENode n) const {
  if (n.a != kNoClass) n.a = find(n.a);
  if (n.b != kNoClass) n.b = find(n.b);
  return n;
}

ClassId EGraph::add(ENode n) {
  n = canonical(n);
  if ((n.op == TermOp::sum || n.op == TermOp::max) && n.k == 1) return n.a;
  auto it = memo_.find(n);
  if (it != memo_.end()) return find(it->second);
  auto id = static_cast<ClassId>(parent_.size());
  parent_.push_back(id);
  class_nodes_.push_back({n});
  memo_.emplace(n, id);
  return id;
}

ClassId EGraph::add_term(const TermStore& store, TermId t) {
  const TermNode& n = store.node(t);
  ENode e{n.op, n.k, kNoClass, kNoClass};
  if (n.a != kNoTerm) e.a = add_term(store, n.a);
  if (n.b != kNoTerm) e.b = add_term(store, n.b);
  return add(e);
}

std::optional<ClassId> EGraph::lookup(ENode n) const {
  n = canonical(n);
  if ((n.op == TermOp::sum || n.op == TermOp::max) && n.k == 1) return n.a;
  auto it = memo_.find(n);
  if (it == memo_.end()) return std::nullopt;
  return find(it->second);
}

bool EGraph::merge(ClassId a, ClassId b) {
  a = find(a);
  b = find(b);
  if (a == b) return false;
  // The smaller id stays the root so that the result does not depend on merge order.
  if (b < a) std::swap(a, b);
  parent_[b] = a;
  auto& into = class_nodes_[a];
  auto& from = class_nodes_[b];
  into.insert(into.end(), from.begin(), from.end());
  from.clear();
  from.shrink_to_fit();
  return true;
}

size_t EGraph::num_classes() const {
  size_t n = 0;
  for (ClassId c = 0; c < parent_.size(); ++c) n += parent_[c] == c ? 1 : 0;
  return n;
}

void EGraph::rebuild() {
  auto key = [](const ENode& n) { return std::tie(n.op, n.k, n.a, n.b); };
  for (;;) {
    memo_.clear();
    std::vector<std::pair<ClassId, ClassId>> pending;
    for (ClassId c = 0; c < parent_.size(); ++c) {
      if (parent_[c] != c) continue;
      for (ENode& n : class_nodes_[c]) {
        n = canonical(n);
        auto [it, inserted] = memo_.emplace(n, c);
        if (!inserted && it->second != c) pending.emplace_back(it->second, c);
      }
    }
    bool merged = false;
    for (auto [a, b] : pending) merged |= merge(a, b);
    for (ClassId c = 0; c < parent_.size(); ++c) parent_[c] = find(c);
    if (!merged) break;
  }
  for (ClassId c = 0; c < parent_.size(); ++c) {
    if (parent_[c] != c) continue;
    auto& v = class_nodes_[c];
    std::sort(v.begin(), v.end(), [&](const ENode& x, const ENode& y) { return key(x) < key(y); });
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }
}

void EGraph::match_todo(const Pattern& p, std::vector<std::pair<int, ClassId>>& todo, Subst& s,
                        std::vector<Subst>& out) const {
  if (todo.empty()) {
    out.push_back(s);
    return;
  }
  auto [node, cls] = todo.back();
  todo.pop_back();
  ClassId c = find(cls);
  const PatNode& pn = p.nodes[static_cast<size_t>(node)];
  if (pn.is_var) {
    ClassId& bound = s.vars[static_cast<size_t>(pn.var)];
    if (bound == kNoClass) {
      bound = c;
      match_todo(p, todo, s, out);
      bound = kNoClass;
    } else if (bound == c) {
      match_todo(p, todo, s, out);
    }
  } else {
    for (const ENode& en : class_nodes_[c]) match_enode(p, node, en, todo, s, out);
  }
  todo.emplace_back(node, cls);
}

void EGraph::match_enode(const Pattern& p, int node, const ENode& en,
                         std::vector<std::pair<int, ClassId>>& todo, Subst& s,
                         std::vector<Subst>& out) const {
  const PatNode& pn = p.nodes[static_cast<size_t>(node)];
  if (pn.op != en.op || (pn.op == TermOp::fn && pn.k != en.k)) return;
  bool bound_size = false;
  if (pn.op == TermOp::sum || pn.op == TermOp::max) {
    if (pn.k_var < 0) {
      if (pn.k != en.k) return;
    } else {
      int64_t& sz = s.sizes[static_cast<size_t>(pn.k_var)];
      if (sz == 0) {
        sz = en.k;
        bound_size = true;
      } else if (sz != en.k) {
        return;
      }
    }
  }
  size_t depth = todo.size();
  if (pn.b >= 0) todo.emplace_back(pn.b, en.b);
  if (pn.a >= 0) todo.emplace_back(pn.a, en.a);
  match_todo(p, todo, s, out);
  todo.resize(depth);
  if (bound_size) s.sizes[static_cast<size_t>(pn.k_var)] = 0;
}

ClassId EGraph::instantiate(const Pattern& p, int node, const Subst& s) {
  const PatNode& pn = p.nodes[static_cast<size_t>(node)];
  if (pn.is_var) return s.vars[static_cast<size_t>(pn.var)];
  ENode n{pn.op, 0, kNoClass, kNoClass};
  if (pn.op == TermOp::sum || pn.op == TermOp::max)
    n.k = pn.k_var < 0 ? pn.k : s.sizes[static_cast<size_t>(pn.k_var)];
  if (pn.op == TermOp::fn) n.k = pn.k;
  int arity = term_arity(pn.op);
  if (arity >= 1) n.a = instantiate(p, pn.a, s);
  if (arity >= 2) n.b = instantiate(p, pn.b, s);
  return add(n);
}

SaturationStats EGraph::saturate(const std::vector<Rewrite>& rules,
                                 const SaturationLimits& limits) {
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  SaturationStats stats;
  stats.rules = rules.size();
  // Rules indexed by the operator at the root of their left side.
  std::vector<std::vector<size_t>> by_op(static_cast<size_t>(TermOp::cat) + 1);
  for (size_t r = 0; r < rules.size(); ++r) {
    const Pattern& lhs = rules[r].pat.lhs;
    by_op[static_cast<size_t>(lhs.nodes[static_cast<size_t>(lhs.root)].op)].push_back(r);
  }
  struct Match {
    size_t rule;
    ClassId cls;
    Subst subst;
  };
  rebuild();
  bool stopped = false;
  while (!stopped) {
    if (stats.iterations >= limits.max_iterations) {
      stats.stop = SaturationStop::iteration_limit;
      break;
    }
    ++stats.iterations;
    std::vector<Match> matches;
    std::vector<Subst> found;
    std::vector<std::pair<int, ClassId>> todo;
    for (ClassId c = 0; c < parent_.size() && !stopped; ++c) {
      if (parent_[c] != c) continue;
      for (const ENode& en : class_nodes_[c]) {
        for (size_t r : by_op[static_cast<size_t>(en.op)]) {
          const PatternPair& pat = rules[r].pat;
          Subst s;
          s.vars.fill(kNoClass);
          s.sizes.fill(0);
          found.clear();
          todo.clear();
          match_enode(pat.lhs, pat.lhs.root, en, todo, s, found);
          for (const Subst& f : found) matches.push_back(Match{r, c, f});
        }
        // Matches are bounded with the nodes (most re-find existing nodes; each may add one).
        if (matches.size() > limits.max_nodes * 8) {
          stats.stop = SaturationStop::node_limit;
          stopped = true;
          break;
        }
      }
      if (!stopped && (c & 63) == 0 && elapsed() > limits.max_seconds) {
        stats.stop = SaturationStop::time_limit;
        stopped = true;
      }
    }
    size_t nodes_before = memo_.size();
    bool changed = false;
    for (const Match& m : matches) {
      if (stopped) break;
      const PatternPair& pat = rules[m.rule].pat;
      ClassId made = instantiate(pat.rhs, pat.rhs.root, m.subst);
      changed |= merge(m.cls, made);
      if (memo_.size() > limits.max_nodes) {
        stats.stop = SaturationStop::node_limit;
        stopped = true;
      }
    }
    changed |= memo_.size() != nodes_before;
    rebuild();
    if (!stopped && !changed) break;  // saturated
    if (!stopped && elapsed() > limits.max_seconds) {
      stats.stop = SaturationStop::time_limit;
      stopped = true;
    }
  }
  rebuild();
  stats.nodes = memo_.size();
  stats.classes = num_classes();
  stats.seconds = elapsed();
  return stats;
}

}  // namespace weft
