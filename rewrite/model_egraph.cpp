// Equality saturation over a block's table operators with the generated rules, and greedy
// extraction back to a block.
#include "rewrite/model_egraph.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <tuple>

#include "model/deduce.h"
#include "rewrite/model_apply.h"
#include "rewrite/model_match.h"

namespace weft {

namespace {

using EClass = int32_t;
constexpr int kLeaf = -1;  // a value the block's operators read from outside them
constexpr int kItem = -2;  // one result of a multi-result operator's tuple

// At most this many matches of one direction per round (commuting operators over equal operands
// would otherwise match combinatorially), as the backtracking matcher allows.
constexpr size_t kMaxMatchesPerDirection = 256;

std::string attrs_key(const MAttrs& attrs) {
  std::string out;
  for (const auto& [name, value] : attrs) {
    out += name + "=";
    if (const auto* e = std::get_if<SymExpr>(&value))
      out += e->str();
    else if (const auto* r = std::get_if<Rational>(&value))
      out += r->str();
    else
      for (const SymExpr& x : std::get<std::vector<SymExpr>>(value)) out += x.str() + ",";
    out += ";";
  }
  return out;
}

struct Node {
  int op = kLeaf;   // an OpKind, kLeaf or kItem
  std::string key;  // the attributes (operators), the value's name (leaves), the index (items)
  std::vector<EClass> args;
  MAttrs attrs;
  MType type;
  int64_t index = 0;     // items
  std::string var;       // the function's value it was made from ("" for the rules' nodes)
  int application = -1;  // the rule application that added it (-1: the function's own)
  bool alive = true;     // false once congruence made it a duplicate of another node
};

using NodeKey = std::tuple<int, std::string, std::vector<EClass>>;

class BlockGraph {
 public:
  EClass find(EClass c) const {
    while (parent_[static_cast<size_t>(c)] != c) {
      parent_[static_cast<size_t>(c)] =
          parent_[static_cast<size_t>(parent_[static_cast<size_t>(c)])];
      c = parent_[static_cast<size_t>(c)];
    }
    return c;
  }

  // The class of `n` (a new one unless an equal node is represented).
  EClass add(Node n) {
    for (EClass& a : n.args) a = find(a);
    NodeKey key{n.op, n.key, n.args};
    if (auto it = memo_.find(key); it != memo_.end()) return find(class_of_node_[it->second]);
    const int id = static_cast<int>(nodes_.size());
    const EClass c = static_cast<EClass>(parent_.size());
    if (n.op >= 0) by_kind_[n.op].push_back(id);
    types_.push_back(n.type);
    nodes_.push_back(std::move(n));
    parent_.push_back(c);
    members_.push_back({id});
    class_of_node_.push_back(c);
    memo_.emplace(std::move(key), id);
    return c;
  }

  bool merge(EClass a, EClass b) {
    a = find(a);
    b = find(b);
    if (a == b) return false;
    if (b < a) std::swap(a, b);
    parent_[static_cast<size_t>(b)] = a;
    auto& to = members_[static_cast<size_t>(a)];
    auto& from = members_[static_cast<size_t>(b)];
    to.insert(to.end(), from.begin(), from.end());
    from.clear();
    return true;
  }

  // Restores congruence: nodes equal once their operands are canonical share a class.
  void rebuild() {
    bool changed = true;
    while (changed) {
      changed = false;
      memo_.clear();
      for (size_t id = 0; id < nodes_.size(); ++id) {
        Node& n = nodes_[id];
        if (!n.alive) continue;
        for (EClass& a : n.args) a = find(a);
        auto [it, fresh] = memo_.emplace(NodeKey{n.op, n.key, n.args}, static_cast<int>(id));
        if (fresh) continue;
        const EClass kept = find(class_of_node_[static_cast<size_t>(it->second)]);
        if (merge(kept, class_of_node_[id]))
          changed = true;
        else
          n.alive = false;
      }
    }
    for (size_t c = 0; c < members_.size(); ++c) {
      auto& ms = members_[c];
      ms.erase(std::remove_if(ms.begin(), ms.end(),
                              [&](int id) { return !nodes_[static_cast<size_t>(id)].alive; }),
               ms.end());
    }
    for (size_t id = 0; id < nodes_.size(); ++id) class_of_node_[id] = find(class_of_node_[id]);
  }

  const Node& node(int id) const { return nodes_[static_cast<size_t>(id)]; }
  EClass class_of(int id) const { return find(class_of_node_[static_cast<size_t>(id)]); }
  const std::vector<int>& members(EClass c) const { return members_[static_cast<size_t>(find(c))]; }
  const std::vector<int>& of_kind(int op) const {
    static const std::vector<int> none;
    auto it = by_kind_.find(op);
    return it == by_kind_.end() ? none : it->second;
  }
  const MType& type(EClass c) const { return types_[static_cast<size_t>(find(c))]; }
  int rank(EClass c) const {
    const MType& t = type(c);
    return t.is_tensor() && t.dims ? t.rank : -1;
  }
  size_t num_nodes() const { return nodes_.size(); }
  size_t num_classes() const {
    size_t n = 0;
    for (size_t c = 0; c < parent_.size(); ++c)
      n += find(static_cast<EClass>(c)) == static_cast<EClass>(c);
    return n;
  }
  size_t capacity() const { return parent_.size(); }

 private:
  mutable std::vector<EClass> parent_;
  std::vector<std::vector<int>> members_;  // alive nodes of each root class
  std::vector<MType> types_;               // of each class (a root's is its class's)
  std::vector<Node> nodes_;
  std::vector<EClass> class_of_node_;
  std::map<int, std::vector<int>> by_kind_;
  std::map<NodeKey, int> memo_;
};

// A match of a pattern in the e-graph: the class of each rule input, and of each output (a
// multi-result operator's output as its tuple class and result index).
struct EMatch {
  std::vector<EClass> inputs;  // -1: an input this side does not read
  int lift = 0;
  std::optional<Rational> base;
  std::vector<std::pair<EClass, int>> outputs;  // (class, -1) or (tuple class, result)
};

// E-matching of a rule side, sinks first as the backtracking matcher does, over classes: an
// operand that is a pattern operator's result constrains that operator to the operand's class.
// States are fixed-size (rule sides are small), so trying a candidate allocates nothing.
class EMatcher {
 public:
  static constexpr size_t kMaxOps = 8, kMaxInputs = 8;

  EMatcher(const BlockGraph& g, const Pattern& p, SymProver& prover)
      : g_(g), p_(p), prover_(prover) {}

  std::vector<EMatch> run() {
    if (p_.ops.size() > kMaxOps || p_.input_dims.size() > kMaxInputs) return {};
    for (const PatternOp& po : p_.ops)
      if (g_.of_kind(static_cast<int>(po.kind)).empty()) return {};
    State s;
    s.cls.fill(-1);
    s.nodes.fill(-1);
    s.inputs.fill(-1);
    visit(static_cast<int>(p_.ops.size()) - 1, s);
    return std::move(out_);
  }

 private:
  struct State {
    std::array<EClass, kMaxOps> cls;  // the class each pattern op's result must be in (-1: free)
    std::array<int, kMaxOps> nodes;   // the node each pattern op took
    std::array<EClass, kMaxInputs> inputs;
    int lift = -1;
    std::optional<Rational> base;
  };

  void visit(int j, const State& s) {
    if (out_.size() >= kMaxMatchesPerDirection) return;
    if (j < 0) return finish(s);
    const size_t ju = static_cast<size_t>(j);
    const PatternOp& po = p_.ops[ju];
    const int kind = static_cast<int>(po.kind);
    const std::vector<int>& candidates = s.cls[ju] >= 0 ? g_.members(s.cls[ju]) : g_.of_kind(kind);
    for (int id : candidates) {
      const Node& n = g_.node(id);
      if (!n.alive || n.op != kind || n.args.size() != po.operands.size()) continue;
      int rank0 = -1;
      if (po.result_ranks.size() == 1) {
        rank0 = n.type.is_tensor() && n.type.dims ? n.type.rank : -1;
      } else if (n.type.kind == MTypeKind::tuple &&
                 n.type.fields.size() == po.result_ranks.size() && n.type.fields[0].is_tensor()) {
        rank0 = n.type.fields[0].rank;
      }
      const int lift = rank0 - po.result_ranks[0];
      if (rank0 < 0 || lift < 0 || (s.lift >= 0 && lift != s.lift)) continue;
      if (std::find(s.nodes.begin(), s.nodes.begin() + static_cast<long>(p_.ops.size()), id) !=
          s.nodes.begin() + static_cast<long>(p_.ops.size()))
        continue;
      State t = s;
      t.cls[ju] = g_.class_of(id);
      t.nodes[ju] = id;
      t.lift = lift;
      std::array<size_t, kMaxOps> order{};
      for (size_t k = 0; k < po.operands.size(); ++k) order[k] = k;
      bind_operand(j, n, order, 0, t);
      if (op_info(po.kind).commutative && po.operands.size() == 2 &&
          g_.find(n.args[0]) != g_.find(n.args[1])) {
        std::swap(order[0], order[1]);
        bind_operand(j, n, order, 0, t);
      }
    }
  }

  // Operand k of pattern op j (taken by node n, operands in `order`), then the next; once all are
  // bound, the attributes, then the pattern op before j.
  void bind_operand(int j, const Node& n, const std::array<size_t, kMaxOps>& order, size_t k,
                    State st) {
    const PatternOp& po = p_.ops[static_cast<size_t>(j)];
    if (k == po.operands.size()) {
      const int first_rank = n.args.empty() ? 0 : g_.rank(n.args[order[0]]);
      if (attrs_match_pattern(po, n.attrs, first_rank, st.lift, st.base, {})) visit(j - 1, st);
      return;
    }
    const PatternRef& ref = po.operands[k];
    const EClass c = g_.find(n.args[order[k]]);
    if (g_.rank(c) != p_.rank(ref) + st.lift) return;
    if (ref.input) {
      EClass& slot = st.inputs[static_cast<size_t>(ref.index)];
      if (slot >= 0 && slot != c) return;
      slot = c;
      return bind_operand(j, n, order, k + 1, st);
    }
    EClass& slot = st.cls[static_cast<size_t>(ref.index)];
    if (p_.ops[static_cast<size_t>(ref.index)].result_ranks.size() == 1) {
      if (slot >= 0 && slot != c) return;
      slot = c;
      return bind_operand(j, n, order, k + 1, st);
    }
    // A result of a multi-result operator: the operand is an item of its tuple.
    for (int id : g_.members(c)) {
      const Node& item = g_.node(id);
      if (!item.alive || item.op != kItem || item.index != ref.result) continue;
      const EClass tuple = g_.find(item.args[0]);
      if (slot >= 0 && slot != tuple) continue;
      State t = st;
      t.cls[static_cast<size_t>(ref.index)] = tuple;
      bind_operand(j, n, order, k + 1, t);
    }
  }

  void finish(const State& s) {
    std::vector<const MType*> types;
    for (size_t i = 0; i < p_.input_dims.size(); ++i)
      types.push_back(s.inputs[i] < 0 ? nullptr : &g_.type(s.inputs[i]));
    if (!rule_dims_consistent(p_, types, s.lift, prover_)) return;
    EMatch m;
    m.inputs.assign(s.inputs.begin(), s.inputs.begin() + static_cast<long>(p_.input_dims.size()));
    m.lift = s.lift;
    if (s.base && !(*s.base == Rational(2))) m.base = s.base;
    for (const PatternRef& o : p_.outputs) {
      if (o.input)
        m.outputs.push_back({s.inputs[static_cast<size_t>(o.index)], -1});
      else if (p_.ops[static_cast<size_t>(o.index)].result_ranks.size() == 1)
        m.outputs.push_back({s.cls[static_cast<size_t>(o.index)], -1});
      else
        m.outputs.push_back({s.cls[static_cast<size_t>(o.index)], o.result});
    }
    out_.push_back(std::move(m));
  }

  const BlockGraph& g_;
  const Pattern& p_;
  SymProver& prover_;
  std::vector<EMatch> out_;
};

// The class of result `r` of the tuple class `tuple` (its item node, made when missing).
EClass item_class(BlockGraph& g, EClass tuple, int r, int application) {
  const MType& t = g.type(tuple);
  Node n;
  n.op = kItem;
  n.key = std::to_string(r);
  n.args = {tuple};
  n.type = t.fields.at(static_cast<size_t>(r));
  n.index = r;
  n.application = application;
  return g.add(std::move(n));
}

// Adds the other side `to` of a match and merges each of its outputs with the match's. False
// when it does not deduce without conditions (nothing is merged then).
bool apply_in_graph(BlockGraph& g, const EMatch& m, const Pattern& to, int application,
                    SymProver& prover) {
  std::vector<EClass> values(to.ops.size(), -1);
  auto value_of = [&](const PatternRef& ref) -> EClass {
    if (ref.input) return m.inputs.at(static_cast<size_t>(ref.index));
    const EClass c = values.at(static_cast<size_t>(ref.index));
    if (to.ops[static_cast<size_t>(ref.index)].result_ranks.size() == 1) return c;
    return item_class(g, c, ref.result, application);
  };
  for (size_t j = 0; j < to.ops.size(); ++j) {
    const PatternOp& po = to.ops[j];
    std::optional<MAttrs> attrs = lifted_attrs(po.attrs, m.lift, m.base);
    if (!attrs) return false;
    Node n;
    n.op = static_cast<int>(po.kind);
    n.application = application;
    std::vector<MType> in;
    for (const PatternRef& ref : po.operands) {
      const EClass c = value_of(ref);
      if (c < 0) return false;  // an input this side reads but the match lacks
      n.args.push_back(c);
      in.push_back(g.type(c));
    }
    std::vector<SymCondition> checks;
    try {
      DeduceContext ctx(prover, {}, &checks);
      n.type = deduce_table_op(ctx, po.kind, in, *attrs);
    } catch (const UserError&) {
      return false;
    }
    if (!checks.empty()) return false;  // unprovable shape conditions: not applied
    if (po.result_ranks.size() > 1 &&
        (n.type.kind != MTypeKind::tuple || n.type.fields.size() != po.result_ranks.size()))
      return false;
    n.attrs = std::move(*attrs);
    n.key = attrs_key(n.attrs);
    values[j] = g.add(std::move(n));
  }
  std::vector<std::pair<EClass, EClass>> pairs;
  for (size_t o = 0; o < m.outputs.size(); ++o) {
    const EClass now = value_of(to.outputs.at(o));
    const auto [c, r] = m.outputs[o];
    const EClass was = r < 0 ? c : item_class(g, c, r, application);
    if (now < 0 || was < 0 || !same_model_type(g.type(now), g.type(was), prover)) return false;
    pairs.push_back({now, was});
  }
  for (const auto& [a, b] : pairs) g.merge(a, b);
  return true;
}

// Tensat's greedy extraction: per class the node of least cost, its operands' costs included.
struct Extraction {
  std::vector<int> choice;   // per class capacity: the chosen node (-1: none)
  std::vector<double> best;  // per class: the chosen node's cost, operands included
};

// Each node's own predicted time, priced once (extraction runs after every round).
struct NodePrices {
  explicit NodePrices(ModelCost& c) : cost(c) {}
  ModelCost& cost;
  std::vector<double> own;  // per node; NaN: not priced yet
};

Extraction extract(const BlockGraph& g, NodePrices& prices) {
  ModelCost& cost = prices.cost;
  const size_t classes = g.capacity();
  // Which classes the compile computes from weights alone (free at run time).
  std::vector<char> constant(classes, 0);
  std::vector<double> own(g.num_nodes(), 0);
  prices.own.resize(g.num_nodes(), std::numeric_limits<double>::quiet_NaN());
  auto synthetic = [&](const Node& n, std::map<std::string, MType>& types) {
    Binding b;
    b.var = "value";
    b.type = n.type;
    b.call.kind = n.op == kItem ? CallKind::item : CallKind::op;
    if (n.op >= 0) b.call.callee = std::string(op_info(static_cast<OpKind>(n.op)).name);
    b.call.attrs = n.attrs;
    for (EClass a : n.args) {
      const std::string name = fmt::format("c{}", g.find(a));
      b.call.args.push_back(name);
      types[name] = g.type(a);
    }
    return b;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t id = 0; id < g.num_nodes(); ++id) {
      const Node& n = g.node(static_cast<int>(id));
      const EClass c = g.class_of(static_cast<int>(id));
      if (!n.alive || constant[static_cast<size_t>(c)]) continue;
      bool is_constant = n.op == kLeaf && cost.constants().count(n.key);
      if (n.op != kLeaf && !n.args.empty()) {
        std::set<std::string> names;
        std::map<std::string, MType> types;
        for (EClass a : n.args)
          if (constant[static_cast<size_t>(g.find(a))]) names.insert(fmt::format("c{}", g.find(a)));
        const Binding b = synthetic(n, types);
        is_constant =
            names.size() == std::set<std::string>(b.call.args.begin(), b.call.args.end()).size() &&
            folds_at_compile_time(b, types, names);
      }
      if (is_constant) constant[static_cast<size_t>(c)] = changed = true;
    }
  }
  for (size_t id = 0; id < g.num_nodes(); ++id) {
    const Node& n = g.node(static_cast<int>(id));
    if (!n.alive || n.op < 0) continue;
    bool folded = !n.args.empty();
    for (EClass a : n.args) folded = folded && constant[static_cast<size_t>(g.find(a))];
    if (folded && constant[static_cast<size_t>(g.class_of(static_cast<int>(id)))]) continue;
    if (std::isnan(prices.own[id])) {
      std::map<std::string, MType> types;
      prices.own[id] = cost.entry(synthetic(n, types), types).seconds;
    }
    own[id] = prices.own[id];
  }
  const double inf = std::numeric_limits<double>::infinity();
  Extraction out;
  std::vector<double>& best = out.best;
  best.assign(classes, inf);
  out.choice.assign(classes, -1);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t id = 0; id < g.num_nodes(); ++id) {
      const Node& n = g.node(static_cast<int>(id));
      if (!n.alive) continue;
      double v = own[id];
      for (EClass a : n.args) v += best[static_cast<size_t>(g.find(a))];
      const size_t c = static_cast<size_t>(g.class_of(static_cast<int>(id)));
      // Cheaper, or as cheap (within rounding) and earlier: the function's own nodes come first,
      // so among equal graphs the one as written is kept.
      const bool cheaper = v < best[c] * (1 - 1e-9);
      const bool tie =
          !cheaper && v <= best[c] * (1 + 1e-9) && out.choice[c] > static_cast<int>(id);
      if (cheaper || tie) {
        best[c] = v;
        out.choice[c] = static_cast<int>(id);
        changed = true;
      }
    }
  }
  return out;
}

// One block of a function as an e-graph: its float table operators (and the items of their
// tuples) are nodes, every other value they read a leaf.
struct BlockState {
  BlockGraph graph;
  std::map<std::string, EClass> class_of;  // each value of the block's operators, and each leaf
  std::set<size_t> members;                // bindings of the block that are nodes
  // Values of the nodes read by anything else (any block), or the function's result: what an
  // extraction must compute.
  std::vector<std::string> live_out;
};

BlockState block_graph(const Function& f, size_t block, const std::map<std::string, MType>& types) {
  BlockState s;
  const std::vector<Binding>& bs = f.blocks[block].bindings;
  auto operand = [&](const std::string& v) {
    if (auto it = s.class_of.find(v); it != s.class_of.end()) return it->second;
    Node leaf;
    leaf.key = v;
    leaf.var = v;
    leaf.type = types.at(v);
    return s.class_of[v] = s.graph.add(std::move(leaf));
  };
  for (size_t i = 0; i < bs.size(); ++i) {
    const Binding& b = bs[i];
    Node n;
    if (b.call.kind == CallKind::op && b.type.every_tensor(is_float_dtype)) {
      // Only what a µGraph holds: the rules' operators are among them, and the check of a
      // rewrite compares µGraphs (a model-only operator stays a boundary the block reads).
      auto kind = op_by_name(b.call.callee);
      if (!kind || !(op_info(*kind).levels & kAtKernel)) continue;
      n.op = static_cast<int>(*kind);
      n.attrs = b.call.attrs;
      n.key = attrs_key(n.attrs);
    } else if (b.call.kind == CallKind::item && b.call.args.size() == 1 &&
               s.class_of.count(b.call.args[0]) &&
               s.graph.type(s.class_of.at(b.call.args[0])).kind == MTypeKind::tuple &&
               s.graph.node(s.graph.members(s.class_of.at(b.call.args[0])).front()).op >= 0) {
      auto idx = std::get<SymExpr>(b.call.attrs.at("index")).as_constant();
      if (!idx) continue;
      n.op = kItem;
      n.index = *idx;
      n.key = std::to_string(*idx);
    } else {
      continue;
    }
    for (const std::string& a : b.call.args) n.args.push_back(operand(a));
    n.type = b.type;
    n.var = b.var;
    s.class_of[b.var] = s.graph.add(std::move(n));
    s.members.insert(i);
  }
  std::set<std::string> own_vars, seen;
  for (size_t i : s.members) own_vars.insert(bs[i].var);
  auto note = [&](const std::string& v) {
    if (own_vars.count(v) && seen.insert(v).second) s.live_out.push_back(v);
  };
  for (size_t bi = 0; bi < f.blocks.size(); ++bi)
    for (size_t i = 0; i < f.blocks[bi].bindings.size(); ++i)
      if (bi != block || !s.members.count(i))
        for (const std::string& v : reads_of(f.blocks[bi].bindings[i].call)) note(v);
  note(f.result);
  return s;
}

struct Saturation {
  StopReason stop = StopReason::complete;
  int iterations = 0;
  std::vector<std::pair<int, bool>> applications;  // (rule, reverse) of each application
};

// The predicted time of the block's live-outs as the greedy extraction computes them.
double extracted_cost(const BlockState& s, const Extraction& x) {
  double total = 0;
  for (const std::string& v : s.live_out)
    total += x.best[static_cast<size_t>(s.graph.find(s.class_of.at(v)))];
  return total;
}

Saturation saturate(BlockState& s, const std::vector<RuleDirection>& dirs,
                    const EGraphLimits& limits, const Budget& budget, SymProver& prover,
                    BaseVerdicts& base_verdicts, uint64_t seed, NodePrices& prices,
                    const ProgressFn& progress, const std::string& where) {
  BlockGraph& g = s.graph;
  Saturation out;
  double best = extracted_cost(s, extract(g, prices));
  int flat = 0;  // rounds since the extraction last got cheaper
  using Key = std::tuple<size_t, std::vector<EClass>, std::vector<std::pair<EClass, int>>, int,
                         std::string>;
  std::set<Key> applied;
  for (;;) {
    if (out.iterations >= limits.max_iterations) {
      out.stop = StopReason::state_budget;
      break;
    }
    ++out.iterations;
    std::vector<std::pair<size_t, EMatch>> found;
    for (size_t d = 0; d < dirs.size(); ++d) {
      if (budget.left_s() <= 0) {
        out.stop = StopReason::time_budget;
        break;
      }
      for (EMatch& m : EMatcher(g, dirs[d].from, prover).run()) {
        if (m.base && !base_verdicts.holds(*dirs[d].source, *m.base, seed)) continue;
        std::vector<EClass> inputs;
        for (EClass c : m.inputs) inputs.push_back(c < 0 ? c : g.find(c));
        std::vector<std::pair<EClass, int>> outputs;
        for (const auto& [c, r] : m.outputs) outputs.push_back({c < 0 ? c : g.find(c), r});
        if (!applied.insert({d, inputs, outputs, m.lift, m.base ? m.base->str() : ""}).second)
          continue;
        found.push_back({d, std::move(m)});
      }
    }
    const size_t nodes = g.num_nodes(), classes = g.num_classes();
    for (const auto& [d, m] : found) {
      if (g.num_nodes() >= static_cast<size_t>(limits.max_nodes)) break;
      if (budget.left_s() <= 0) {
        out.stop = StopReason::time_budget;
        break;
      }
      // Numbered before it is tried: nodes a failed application added keep its number.
      const int application = static_cast<int>(out.applications.size());
      out.applications.push_back({dirs[d].rule, dirs[d].reverse});
      apply_in_graph(g, m, dirs[d].to, application, prover);
    }
    g.rebuild();
    const double now = extracted_cost(s, extract(g, prices));
    flat = now < best * (1 - 1e-9) ? 0 : flat + 1;
    best = std::min(best, now);
    if (progress)
      progress(
          fmt::format("rewrite: {}: round {}: {} matches, {} e-nodes in {} classes, extracted "
                      "tree cost {:.2f} us, {:.1f} s left",
                      where, out.iterations, found.size(), g.num_nodes(), g.num_classes(),
                      now * 1e6, budget.left_s()));
    if (out.stop != StopReason::complete) break;
    if (g.num_nodes() >= static_cast<size_t>(limits.max_nodes)) {
      out.stop = StopReason::state_budget;
      break;
    }
    if (g.num_nodes() == nodes && g.num_classes() == classes) break;  // saturated
    if (limits.patience > 0 && flat >= limits.patience) {
      out.stop = StopReason::converged;
      break;
    }
  }
  return out;
}

// `f` with block `block`'s nodes replaced by the extraction; nullopt when the extraction or the
// block's order has a cycle.
std::optional<Function> emit_block(const Function& f, size_t block, const BlockState& s,
                                   const Extraction& x, const Saturation& sat,
                                   std::map<std::string, std::string>& renamed,
                                   std::vector<RewriteStep>& steps) {
  const BlockGraph& g = s.graph;
  const std::vector<Binding>& bs = f.blocks[block].bindings;
  std::set<std::string> taken;  // every name the function defines
  for (const Param& p : f.params) taken.insert(p.name);
  for (const Block& blk : f.blocks)
    for (const Binding& b : blk.bindings) taken.insert(b.var);
  std::map<std::string, size_t> position;
  for (size_t i = 0; i < bs.size(); ++i) position[bs[i].var] = i;
  const size_t first = s.members.empty() ? 0 : *s.members.begin();
  const SourceLoc loc = s.members.empty() ? SourceLoc{} : bs[first].loc;
  std::map<EClass, std::string> name;
  std::set<EClass> on_path;
  std::vector<Binding> emitted;
  std::vector<int> priority;
  std::set<int> used_applications;
  int fresh = 0;
  std::function<std::optional<std::string>(EClass)> visit =
      [&](EClass c) -> std::optional<std::string> {
    c = g.find(c);
    if (auto it = name.find(c); it != name.end()) return it->second;
    const int id = x.choice[static_cast<size_t>(c)];
    if (id < 0 || !on_path.insert(c).second) return std::nullopt;
    const Node& n = g.node(id);
    Binding b;
    for (EClass a : n.args) {
      auto arg = visit(a);
      if (!arg) return std::nullopt;
      b.call.args.push_back(*arg);
    }
    on_path.erase(c);
    if (n.op == kLeaf) return name[c] = n.key;
    if (!n.var.empty() && position.count(n.var) && s.members.count(position.at(n.var))) {
      const Binding& was = bs[position.at(n.var)];
      b.var = n.var;
      b.loc = was.loc;
      b.runtime_checks = was.runtime_checks;
      priority.push_back(2 * static_cast<int>(position.at(n.var)));
    } else {
      std::string base = "eg";
      for (int other : g.members(c))
        if (g.node(other).op != kLeaf && !g.node(other).var.empty()) {
          base = g.node(other).var + ".eg";
          break;
        }
      do b.var = fmt::format("{}{}", base, fresh++);
      while (taken.count(b.var));
      taken.insert(b.var);
      priority.push_back(2 * static_cast<int>(first) + 1);
      b.loc = loc;
    }
    if (n.application >= 0 && used_applications.insert(n.application).second) {
      const auto [rule, reverse] = sat.applications[static_cast<size_t>(n.application)];
      steps.push_back({rule, reverse, b.var});
    }
    b.call.loc = b.loc;
    if (n.op == kItem) {
      b.call.kind = CallKind::item;
      b.call.attrs["index"] = SymExpr(n.index);
    } else {
      b.call.kind = CallKind::op;
      b.call.callee = std::string(op_info(static_cast<OpKind>(n.op)).name);
      b.call.attrs = n.attrs;
    }
    b.type = n.type;
    name[c] = b.var;
    emitted.push_back(std::move(b));
    return name[c];
  };
  std::map<std::string, std::string> now;
  for (const std::string& v : s.live_out) {
    auto got = visit(s.class_of.at(v));
    if (!got) return std::nullopt;
    if (*got != v) now[v] = *got;
  }
  Function out = f;
  std::vector<Binding> block_bindings;
  std::vector<int> order;
  for (size_t i = 0; i < bs.size(); ++i) {
    if (s.members.count(i)) continue;
    block_bindings.push_back(bs[i]);
    rename_reads(block_bindings.back(), now);
    order.push_back(2 * static_cast<int>(i));
  }
  for (size_t k = 0; k < emitted.size(); ++k) {
    block_bindings.push_back(std::move(emitted[k]));
    order.push_back(priority[k]);
  }
  auto ordered = dependency_order(std::move(block_bindings), order);
  if (!ordered) return std::nullopt;
  out.blocks[block].bindings = std::move(*ordered);
  for (size_t bi = 0; bi < out.blocks.size(); ++bi)
    if (bi != block)
      for (Binding& b : out.blocks[bi].bindings) rename_reads(b, now);
  if (auto it = now.find(out.result); it != now.end()) out.result = it->second;
  renamed = compose_renames(std::move(renamed), now);
  return out;
}

}  // namespace

EGraphRewrite egraph_rewrite_function(const Function& f, const std::vector<RuleDirection>& dirs,
                                      ModelCost& cost, const EGraphLimits& limits,
                                      const Budget& budget, SymProver& prover,
                                      BaseVerdicts& base_verdicts, uint64_t seed,
                                      const ProgressFn& progress) {
  EGraphRewrite out;
  out.function = f;
  Function current = f;
  std::map<std::string, std::string> renamed;
  std::vector<RewriteStep> steps;
  for (size_t block = 0; block < f.blocks.size(); ++block) {
    const std::map<std::string, MType> types = value_types(current);
    BlockState s = block_graph(current, block, types);
    if (s.members.empty()) continue;
    NodePrices prices(cost);
    const Saturation sat = saturate(s, dirs, limits, budget, prover, base_verdicts, seed, prices,
                                    progress, fmt::format("fn {} block {}", f.name, block));
    out.iterations += sat.iterations;
    out.nodes += static_cast<int64_t>(s.graph.num_nodes());
    out.classes += static_cast<int64_t>(s.graph.num_classes());
    out.stop = worse_stop(out.stop, sat.stop);
    const Extraction x = extract(s.graph, prices);
    std::map<std::string, std::string> block_renamed = renamed;
    std::vector<RewriteStep> block_steps;
    auto next = emit_block(current, block, s, x, sat, block_renamed, block_steps);
    // A block is taken only when the whole function is predicted faster with it.
    if (!next || cost.function_s(*next) >= cost.function_s(current) * (1 - 1e-9)) continue;
    current = std::move(*next);
    renamed = std::move(block_renamed);
    steps.insert(steps.end(), block_steps.begin(), block_steps.end());
  }
  if (cost.function_s(current) < cost.function_s(f) * (1 - 1e-9)) {
    out.function = std::move(current);
    out.renamed = std::move(renamed);
    out.steps = std::move(steps);
  }
  return out;
}

}  // namespace weft
