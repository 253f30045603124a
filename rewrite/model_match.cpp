// The matcher: a depth-first assignment of pattern operators to bindings, sinks first.
#include "rewrite/model_match.h"

#include <algorithm>
#include <set>

#include "model/evaluate_at.h"

namespace weft {

namespace {

void note_reads(const Call& c, const FunctionIndex::Site& at, FunctionIndex& index) {
  for (const std::string& v : reads_of(c)) {
    auto& rs = index.readers[v];
    if (rs.empty() || rs.back().block != at.block || rs.back().binding != at.binding)
      rs.push_back(at);
  }
}

// At most this many matches of one pattern in one function: a pattern of commuting operators
// over many equal operands would otherwise match combinatorially.
constexpr size_t kMaxMatchesPerPattern = 256;

struct MatchState {
  int block = -1;
  int lift = -1;
  std::optional<Rational> base;
  std::vector<int> ops;
  std::vector<const std::string*> inputs;  // into the bindings' operands (null: not yet bound)
};

class Matcher {
 public:
  Matcher(const Function& f, const FunctionIndex& index, const Pattern& p, SymProver& prover)
      : f_(f), index_(index), p_(p), prover_(prover) {}

  std::vector<RewriteMatch> run() {
    if (p_.ops.empty()) return {};
    // A function with fewer bindings of an operator than the pattern has cannot match it.
    for (const auto& [kind, n] : p_.kind_counts) {
      auto it = index_.by_kind.find(kind);
      if (it == index_.by_kind.end() || it->second.size() < n) return {};
    }
    MatchState s;
    s.ops.assign(p_.ops.size(), -1);
    s.inputs.assign(p_.input_dims.size(), nullptr);
    visit(static_cast<int>(p_.ops.size()) - 1, s);
    return std::move(out_);
  }

 private:
  const Binding& binding(int block, int i) const {
    return f_.blocks[static_cast<size_t>(block)].bindings[static_cast<size_t>(i)];
  }

  int model_rank(const std::string& v) const {
    auto it = index_.rank.find(v);
    return it == index_.rank.end() ? -1 : it->second;
  }

  void visit(int j, const MatchState& s) {
    if (out_.size() >= kMaxMatchesPerPattern) return;
    if (j < 0) return finish(s);
    const size_t ju = static_cast<size_t>(j);
    if (s.ops[ju] >= 0) {
      for (const MatchState& next : assign(j, s.ops[ju], s)) visit(j - 1, next);
      return;
    }
    auto it = index_.by_kind.find(p_.ops[ju].kind);
    if (it == index_.by_kind.end()) return;
    for (const FunctionIndex::Site& site : it->second) {
      if (s.block >= 0 && site.block != s.block) continue;
      if (std::find(s.ops.begin(), s.ops.end(), site.binding) != s.ops.end()) continue;
      MatchState t = s;
      t.block = site.block;
      t.ops[ju] = site.binding;
      for (const MatchState& next : assign(j, site.binding, t)) visit(j - 1, next);
    }
  }

  // The binding of pattern op `j'` that defines model value `v` as its result `r`, or -1.
  int producer(const std::string& v, const PatternRef& ref, int block) const {
    auto it = index_.defined.find(v);
    if (it == index_.defined.end() || it->second.block != block) return -1;
    const Binding& b = binding(block, it->second.binding);
    const size_t results = p_.ops[static_cast<size_t>(ref.index)].result_ranks.size();
    if (results == 1) return b.call.kind == CallKind::op ? it->second.binding : -1;
    if (b.call.kind != CallKind::item || b.call.args.size() != 1) return -1;
    auto idx = b.call.attrs.find("index");
    if (idx == b.call.attrs.end()) return -1;
    auto c = std::get<SymExpr>(idx->second).as_constant();
    if (!c || *c != ref.result) return -1;
    auto t = index_.defined.find(b.call.args[0]);
    if (t == index_.defined.end() || t->second.block != block) return -1;
    return binding(block, t->second.binding).call.kind == CallKind::op ? t->second.binding : -1;
  }

  std::vector<MatchState> assign(int j, int bi, const MatchState& s) {
    const PatternOp& po = p_.ops[static_cast<size_t>(j)];
    if (index_.kind[static_cast<size_t>(s.block)][static_cast<size_t>(bi)] !=
        static_cast<int>(po.kind))
      return {};
    const Binding& b = binding(s.block, bi);
    if (b.call.args.size() != po.operands.size()) return {};
    // The result's rank decides the lift.
    int rank0 = -1;
    if (po.result_ranks.size() == 1) {
      rank0 = b.type.is_tensor() && b.type.dims ? b.type.rank : -1;
    } else if (b.type.kind == MTypeKind::tuple && b.type.fields.size() == po.result_ranks.size() &&
               b.type.fields[0].is_tensor()) {
      rank0 = b.type.fields[0].rank;
    }
    if (rank0 < 0) return {};
    const int lift = rank0 - po.result_ranks[0];
    if (lift < 0 || (s.lift >= 0 && lift != s.lift)) return {};
    std::vector<std::vector<size_t>> orders = {{}};
    for (size_t k = 0; k < po.operands.size(); ++k) orders[0].push_back(k);
    if (op_info(po.kind).commutative && po.operands.size() == 2 && b.call.args[0] != b.call.args[1])
      orders.push_back({1, 0});
    std::vector<MatchState> out;
    for (const std::vector<size_t>& order : orders) {
      MatchState t = s;
      t.lift = lift;
      bool ok = true;
      for (size_t k = 0; k < po.operands.size() && ok; ++k) {
        const PatternRef& ref = po.operands[k];
        const std::string& v = b.call.args[order[k]];
        if (model_rank(v) != p_.rank(ref) + lift) {
          ok = false;
        } else if (ref.input) {
          const std::string*& slot = t.inputs[static_cast<size_t>(ref.index)];
          ok = !slot || *slot == v;
          slot = &v;
        } else {
          const int pb = producer(v, ref, t.block);
          int& slot = t.ops[static_cast<size_t>(ref.index)];
          ok = pb >= 0 && ref.index < j && (slot < 0 || slot == pb) &&
               (slot == pb || std::find(t.ops.begin(), t.ops.end(), pb) == t.ops.end());
          slot = pb;
        }
      }
      if (ok) out.push_back(std::move(t));
    }
    std::vector<MatchState> kept;
    for (MatchState& t : out)
      if (attrs_match_pattern(po, b.call.attrs,
                              b.call.args.empty() ? 0 : model_rank(b.call.args[0]), lift, t.base,
                              b.call.loc))
        kept.push_back(std::move(t));
    return kept;
  }

  bool dims_consistent(const MatchState& s) {
    std::vector<const MType*> types;
    for (const std::string* v : s.inputs) types.push_back(v ? &index_.types.at(*v) : nullptr);
    return rule_dims_consistent(p_, types, s.lift, prover_);
  }

  // Reads of `v` all from bindings of the match (and `v` not the result).
  bool stays_inside(const std::string& v, int block, const std::set<int>& members) const {
    if (v == index_.result) return false;
    auto it = index_.readers.find(v);
    if (it == index_.readers.end()) return true;
    for (const FunctionIndex::Site& r : it->second)
      if (r.block != block || !members.count(r.binding)) return false;
    return true;
  }

  void finish(const MatchState& s) {
    if (!dims_consistent(s)) return;
    RewriteMatch m;
    m.block = s.block;
    m.lift = s.lift;
    if (s.base && !(*s.base == Rational(2))) m.base = s.base;
    for (const std::string* v : s.inputs) m.inputs.push_back(v ? *v : "");
    m.ops = s.ops;
    std::set<int> members(s.ops.begin(), s.ops.end());
    // Results of each op: result -> the model values holding it.
    std::vector<std::vector<std::vector<std::string>>> held(p_.ops.size());
    for (size_t j = 0; j < p_.ops.size(); ++j) {
      const Binding& b = binding(s.block, s.ops[j]);
      held[j].resize(p_.ops[j].result_ranks.size());
      if (held[j].size() == 1) {
        held[j][0].push_back(b.var);
        continue;
      }
      auto items = index_.items.find(b.var);
      if (items == index_.items.end()) continue;
      for (const auto& [r, vars] : items->second) {
        if (r < 0 || r >= static_cast<int64_t>(held[j].size())) return;
        for (const std::string& v : vars) {
          held[j][static_cast<size_t>(r)].push_back(v);
          const int ib = index_.defined.at(v).binding;
          members.insert(ib);
          m.items.push_back(ib);
        }
      }
    }
    // An input of the rule must come from outside the match (x + 2x is not b + 2a with b the 2a).
    for (const std::string& v : m.inputs) {
      if (v.empty()) continue;
      const FunctionIndex::Site& at = index_.defined.at(v);
      if (at.block == s.block && members.count(at.binding)) return;
    }
    std::set<std::pair<int, int>> output_refs;
    for (const PatternRef& o : p_.outputs) {
      if (o.input) return;  // a side that is its input: nothing to find
      const auto& vars = held[static_cast<size_t>(o.index)][static_cast<size_t>(o.result)];
      if (vars.size() > 1) return;
      m.outputs.push_back(vars.empty() ? "" : vars[0]);
      output_refs.insert({o.index, o.result});
    }
    for (size_t j = 0; j < p_.ops.size(); ++j) {
      const Binding& b = binding(s.block, s.ops[j]);
      if (held[j].size() > 1 && !stays_inside(b.var, s.block, members)) return;
      for (size_t r = 0; r < held[j].size(); ++r) {
        if (output_refs.count({static_cast<int>(j), static_cast<int>(r)})) continue;
        for (const std::string& v : held[j][r])
          if (!stays_inside(v, s.block, members)) return;
      }
    }
    std::sort(m.items.begin(), m.items.end());
    auto key = std::make_pair(m.ops, m.inputs);
    if (!seen_.insert(key).second) return;
    out_.push_back(std::move(m));
  }

  const Function& f_;
  const FunctionIndex& index_;
  const Pattern& p_;
  SymProver& prover_;
  std::vector<RewriteMatch> out_;
  std::set<std::pair<std::vector<int>, std::vector<std::string>>> seen_;
};

}  // namespace

bool rule_dims_consistent(const Pattern& p, const std::vector<const MType*>& types, int lift,
                          SymProver& prover) {
  std::map<std::string, SymExpr> vars;
  for (size_t i = 0; i < types.size(); ++i) {
    if (!types[i]) continue;
    for (size_t k = 0; k < p.input_dims[i].size(); ++k) {
      const SymExpr& d = (*types[i]->dims)[static_cast<size_t>(lift) + k];
      auto [it, fresh] = vars.emplace(p.input_dims[i][k], d);
      if (!fresh && !(it->second == d) &&
          prover.prove_eq(it->second, d).truth != SymTruth::proven_true)
        return false;
    }
  }
  return true;
}

bool attrs_match_pattern(const PatternOp& po, const MAttrs& attrs, int first_rank, int lift,
                         std::optional<Rational>& base, const SourceLoc& loc) {
  if (attrs.size() != po.attrs.entries().size()) return false;
  for (const auto& [name, value] : po.attrs.entries()) {
    auto it = attrs.find(name);
    if (it == attrs.end()) return false;
    if (const auto* i = std::get_if<int64_t>(&value)) {
      const auto* e = std::get_if<SymExpr>(&it->second);
      auto c = e ? e->as_constant() : std::nullopt;
      if (!c) return false;  // a symbolic attribute: no rule of constant attributes matches it
      int64_t d = *c;
      if (axis_attribute(name)) {
        if (d < 0) d += first_rank;
        if (d != *i + lift) return false;
      } else if (d != *i) {
        return false;
      }
    } else if (const auto* p = std::get_if<Rational>(&value)) {
      const auto* q = std::get_if<Rational>(&it->second);
      if (!q) return false;
      const std::optional<int> k = power_of_two(*p);
      if (!k || *k == 0) {
        if (!(*q == *p)) return false;
      } else if (base) {
        if (rule_base_pow(*p, base) != *q) return false;
      } else if (*k == 1 || *k == -1) {
        base = *k == 1 ? *q : Rational::make(q->den(), q->num());
        if (!base) return false;
      } else {
        if (!(*q == *p)) return false;
        base = Rational(2);
      }
    } else {
      Attrs model;
      try {
        model = evaluate_attrs({{name, it->second}}, {}, loc);
      } catch (const UserError&) {
        return false;
      }
      if (!(model.entries().at(name) == value)) return false;
    }
  }
  return true;
}

FunctionIndex index_function(const Function& f) {
  FunctionIndex index;
  index.types = value_types(f);
  for (const auto& [name, t] : index.types)
    if (t.is_tensor() && t.dims) index.rank[name] = t.rank;
  index.result = f.result;
  for (const Param& p : f.params) index.defined[p.name] = {};
  for (size_t bi = 0; bi < f.blocks.size(); ++bi) {
    const std::vector<Binding>& bs = f.blocks[bi].bindings;
    index.kind.emplace_back(bs.size(), -1);
    for (size_t i = 0; i < bs.size(); ++i) {
      const FunctionIndex::Site at{static_cast<int>(bi), static_cast<int>(i)};
      const Binding& b = bs[i];
      index.defined[b.var] = at;
      note_reads(b.call, at, index);
      // Rules hold for real numbers: an operator on integer or bool tensors (whose storage
      // truncates and wraps) is never part of a match.
      if (b.call.kind == CallKind::op && b.type.every_tensor(is_float_dtype)) {
        if (auto kind = op_by_name(b.call.callee)) {
          index.by_kind[*kind].push_back(at);
          index.kind[bi][i] = static_cast<int>(*kind);
        }
      } else if (b.call.kind == CallKind::item && b.call.args.size() == 1) {
        auto idx = b.call.attrs.find("index");
        if (idx != b.call.attrs.end())
          if (auto c = std::get<SymExpr>(idx->second).as_constant())
            index.items[b.call.args[0]][*c].push_back(b.var);
      }
    }
  }
  return index;
}

std::vector<RewriteMatch> find_matches(const Function& f, const FunctionIndex& index,
                                       const Pattern& pattern, SymProver& prover) {
  return Matcher(f, index, pattern, prover).run();
}

}  // namespace weft
