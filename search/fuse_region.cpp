// Rule-built graph-defined kernels: axis classes of a region, its schedules, its block graph.
#include "search/fuse_region.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <numeric>
#include <set>
#include <string>

#include "cost/cost_model.h"
#include "ir/validate.h"

namespace weft {
namespace {

// Where a value of the region lives, given the for-loop's axis.
enum class Place : uint8_t {
  invariant,  // independent of the loop: can be computed in either stage (or both)
  loop,       // carries the loop axis: exists inside the loop only
  post,       // depends on an accumulator: exists after the loop only
};
constexpr uint8_t kNeedLoop = 1, kNeedPost = 2;

struct Schedule {
  std::vector<int> grid_classes;  // axis class per grid dim in use
  std::vector<int64_t> grid_sizes;
  int loop_class = -1;  // -1: no for-loop
  int64_t loop = 1;
};

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> d;
  for (int64_t i = 1; i * i <= n; ++i)
    if (n % i == 0) {
      d.push_back(i);
      if (i != n / i) d.push_back(n / i);
    }
  std::sort(d.begin(), d.end());
  return d;
}

class RegionFuser {
 public:
  RegionFuser(const Graph& p, const std::vector<int>& ops, const Target& t, const FuseOptions& o)
      : p_(p), ops_(ops), target_(t), options_(o) {
    std::sort(ops_.begin(), ops_.end());
    ops_.erase(std::unique(ops_.begin(), ops_.end()), ops_.end());
  }

  std::optional<FusedRegion> run() {
    if (ops_.empty() || !collect() || !analyze_axes()) return std::nullopt;
    std::optional<FusedRegion> best;
    for (const Schedule& s : schedules()) {
      std::optional<FusedRegion> r = build(s);
      if (r && (!best || r->predicted_s < best->predicted_s)) best = std::move(r);
    }
    return best;
  }

 private:
  // Operands, results, and whether every operator is one a rule-built block graph can run.
  bool collect() {
    std::vector<bool> produced(p_.values.size(), false);
    for (int i : ops_) {
      const Op& op = p_.ops.at(static_cast<size_t>(i));
      if (!region_runs(op)) return false;
      for (ValueId v : op.inputs)
        if (!produced[v] && std::find(operands_.begin(), operands_.end(), v) == operands_.end())
          operands_.push_back(v);
      for (ValueId v : op.outputs) produced[v] = true;
    }
    std::vector<bool> in_region(p_.ops.size(), false);
    for (int i : ops_) in_region[i] = true;
    std::vector<std::vector<int>> consumers = p_.consumers();
    for (int i : ops_)
      for (ValueId v : p_.ops[i].outputs) {
        bool used_outside = std::find(p_.outputs.begin(), p_.outputs.end(), v) != p_.outputs.end();
        for (int c : consumers[v]) used_outside |= !in_region[c];
        if (used_outside) results_.push_back(v);
      }
    return !results_.empty();
  }

  int key(ValueId v, size_t d) const { return offset_[v] + static_cast<int>(d); }
  int find(int k) {
    while (parent_[k] != k) k = parent_[k] = parent_[parent_[k]];
    return k;
  }
  void join(ValueId a, size_t da, ValueId b, size_t db) {
    if (p_.type(a).shape[da] != p_.type(b).shape[db]) return;
    parent_[find(key(a, da))] = find(key(b, db));
  }
  // The dims of `v` in axis class `c` (size > 1 only).
  std::vector<size_t> dims_in(ValueId v, int c) {
    std::vector<size_t> out;
    const Shape& s = p_.type(v).shape;
    for (size_t d = 0; d < s.size(); ++d)
      if (s[d] > 1 && find(key(v, d)) == c) out.push_back(d);
    return out;
  }
  bool carries(ValueId v, int c) { return c >= 0 && !dims_in(v, c).empty(); }

  // Axis classes: dims that must be cut alike. Elementwise operators join equal-sized dims with
  // their result's, matmul joins batch dims, rows, columns and the two contracted dims.
  bool analyze_axes() {
    offset_.assign(p_.values.size() + 1, 0);
    for (size_t v = 0; v < p_.values.size(); ++v)
      offset_[v + 1] = offset_[v] + static_cast<int>(p_.values[v].type.shape.size());
    parent_.resize(static_cast<size_t>(offset_.back()));
    std::iota(parent_.begin(), parent_.end(), 0);
    std::set<int> reduced_keys;
    for (int i : ops_) {
      const Op& op = p_.ops[i];
      ValueId out = op.outputs[0];
      size_t r = p_.type(out).shape.size();
      switch (op_info(op.kind).op_class) {
        case OpClass::unary:
        case OpClass::binary:
          for (ValueId in : op.inputs)
            for (size_t d = 0; d < r; ++d) join(in, d, out, d);
          break;
        case OpClass::matmul: {
          ValueId a = op.inputs[0], b = op.inputs[1];
          for (size_t d = 0; d + 2 < r; ++d) {
            join(a, d, out, d);
            join(b, d, out, d);
          }
          join(a, r - 2, out, r - 2);
          join(b, r - 1, out, r - 1);
          join(a, r - 1, b, r - 2);
          reduced_keys.insert(key(a, r - 1));
          break;
        }
        case OpClass::reduction: {
          size_t dim = static_cast<size_t>(op.attrs.get_int("dim"));
          for (size_t d = 0; d < r; ++d)
            if (d != dim) join(op.inputs[0], d, out, d);
          reduced_keys.insert(key(op.inputs[0], dim));
          break;
        }
        case OpClass::movement:
        case OpClass::composite:
        case OpClass::structure:
        case OpClass::hierarchy:
          return false;
      }
    }
    for (int k : reduced_keys) reduced_.insert(find(k));
    // Classes in order of first appearance among the region's values (deterministic).
    std::vector<ValueId> values = operands_;
    for (int i : ops_)
      for (ValueId v : p_.ops[i].outputs) values.push_back(v);
    values_ = values;
    for (ValueId v : values) {
      const Shape& s = p_.type(v).shape;
      for (size_t d = 0; d < s.size(); ++d) {
        if (s[d] <= 1) continue;
        int c = find(key(v, d));
        if (std::find(classes_.begin(), classes_.end(), c) == classes_.end()) {
          classes_.push_back(c);
          class_size_[c] = s[d];
        }
      }
    }
    return true;
  }

  // A class can be cut only if no value holds it twice (matmul(A, A) joins A's two dims).
  bool single(int c) {
    for (ValueId v : values_)
      if (dims_in(v, c).size() > 1) return false;
    return true;
  }

  // Places of every value with the loop over class `lc` (-1: no loop), and the stages each is
  // needed in; false when the region cannot be computed with that loop.
  bool plan(int lc, std::vector<Place>& place, std::vector<uint8_t>& need,
            std::vector<bool>& accumulating) {
    place.assign(p_.values.size(), Place::invariant);
    need.assign(p_.values.size(), 0);
    accumulating.assign(p_.ops.size(), false);
    for (ValueId v : operands_) place[v] = carries(v, lc) ? Place::loop : Place::invariant;
    for (int i : ops_) {
      const Op& op = p_.ops[i];
      ValueId out = op.outputs[0];
      bool any_loop = false, any_post = false;
      for (ValueId v : op.inputs) {
        any_loop |= place[v] == Place::loop;
        any_post |= place[v] == Place::post;
      }
      if (carries(out, lc)) {
        if (any_post) return false;  // a loop value combined with one that exists after the loop
        place[out] = Place::loop;
      } else if (any_loop) {
        // A reduction over the loop axis: computed per iteration, summed by an accumulator.
        const Symbolic sym = op_info(op.kind).symbolic;
        bool sums = sym == Symbolic::contraction || sym == Symbolic::sum || sym == Symbolic::mean;
        if (!sums || any_post) return false;
        accumulating[i] = true;
        place[out] = Place::post;
      } else {
        place[out] = any_post ? Place::post : Place::invariant;
      }
    }
    for (ValueId v : results_) {
      if (place[v] == Place::loop) return false;
      need[v] |= kNeedPost;
    }
    for (auto it = ops_.rbegin(); it != ops_.rend(); ++it) {
      const Op& op = p_.ops[*it];
      uint8_t n = need[op.outputs[0]];
      if (!n) continue;
      uint8_t in_need = accumulating[*it] ? kNeedLoop : n;
      for (ValueId v : op.inputs) need[v] |= in_need;
    }
    for (size_t v = 0; v < need.size(); ++v) {
      if ((need[v] & kNeedPost) && place[v] == Place::loop) return false;
      if ((need[v] & kNeedLoop) && place[v] == Place::post) return false;
    }
    return true;
  }

  std::vector<Schedule> schedules() {
    std::vector<int> grid_ok, loop_ok;
    for (int c : classes_) {
      if (!single(c)) continue;
      if (reduced_.count(c)) {
        std::vector<Place> place;
        std::vector<uint8_t> need;
        std::vector<bool> acc;
        if (plan(c, place, need, acc)) loop_ok.push_back(c);
        continue;
      }
      bool in_every_result = true;
      for (ValueId r : results_) in_every_result &= dims_in(r, c).size() == 1;
      if (in_every_result) grid_ok.push_back(c);
    }
    {
      std::vector<Place> place;
      std::vector<uint8_t> need;
      std::vector<bool> acc;
      if (!plan(-1, place, need, acc)) return {};
    }
    // Grid class sets: every subset of up to max_grid_dims of the first few eligible classes.
    constexpr size_t kMaxGridClasses = 4;
    if (grid_ok.size() > kMaxGridClasses) grid_ok.resize(kMaxGridClasses);
    std::vector<std::vector<int>> sets{{}};
    for (int c : grid_ok) {
      size_t n = sets.size();
      for (size_t i = 0; i < n; ++i)
        if (static_cast<int>(sets[i].size()) < std::min(options_.max_grid_dims, 3)) {
          std::vector<int> s = sets[i];
          s.push_back(c);
          sets.push_back(std::move(s));
        }
    }
    std::vector<std::pair<int, int64_t>> loops{{-1, 1}};
    for (int c : loop_ok)
      for (int64_t f : divisors(class_size_[c]))
        if (f >= 2 && f <= options_.max_loop) loops.emplace_back(c, f);
    std::vector<Schedule> out;
    for (const std::vector<int>& set : sets) {
      std::vector<std::vector<int64_t>> sizes{{}};
      for (int c : set) {
        std::vector<std::vector<int64_t>> next;
        for (const auto& prefix : sizes)
          for (int64_t g : divisors(class_size_[c])) {
            int64_t blocks = g;
            for (int64_t x : prefix) blocks *= x;
            if (g < 2 || blocks > options_.max_blocks) continue;
            next.push_back(prefix);
            next.back().push_back(g);
          }
        sizes = std::move(next);
      }
      for (const auto& gs : sizes)
        for (const auto& [lc, f] : loops) out.push_back(Schedule{set, gs, lc, f});
    }
    return out;
  }

  std::optional<FusedRegion> build(const Schedule& s) {
    std::vector<Place> place;
    std::vector<uint8_t> need;
    std::vector<bool> accumulating;
    if (!plan(s.loop_class, place, need, accumulating)) return std::nullopt;
    try {
      return build_planned(s, need, accumulating);
    } catch (const UserError&) {
      return std::nullopt;  // a tile the schedule does not divide evenly
    }
  }

  std::optional<FusedRegion> build_planned(const Schedule& s, const std::vector<uint8_t>& need,
                                           const std::vector<bool>& accumulating) {
    std::array<int64_t, 3> grid = {1, 1, 1};
    for (size_t g = 0; g < s.grid_sizes.size(); ++g) grid[g] = s.grid_sizes[g];
    GraphBuilder bb(Level::block);
    bb.set_block_params(grid, options_.threads, s.loop);
    std::set<std::string> taken;
    for (ValueId v : operands_) taken.insert(p_.value(v).name);
    for (ValueId v : results_) taken.insert(p_.value(v).name);
    int next = 0;
    auto fresh = [&] {
      for (;;) {
        std::string n = fmt::format("b{}", next++);
        if (taken.insert(n).second) return n;
      }
    };
    std::vector<ValueId> params;
    for (ValueId v : operands_) params.push_back(bb.add_input(p_.value(v).name, p_.type(v)));
    // The block value of each program value, per stage.
    std::vector<ValueId> in_loop(p_.values.size(), -1), in_post(p_.values.size(), -1);
    auto add_iter = [&](size_t i, bool post) {
      ValueId v = operands_[i];
      std::vector<int64_t> imap = {-1, -1, -1};
      for (size_t g = 0; g < s.grid_classes.size(); ++g) {
        std::vector<size_t> d = dims_in(v, s.grid_classes[g]);
        if (!d.empty()) imap[g] = static_cast<int64_t>(d[0]);
      }
      int64_t fmap = -1;
      if (!post && carries(v, s.loop_class))
        fmap = static_cast<int64_t>(dims_in(v, s.loop_class)[0]);
      Attrs a;
      a.set("imap", imap);
      a.set("fmap", fmap);
      (post ? in_post : in_loop)[v] =
          bb.add(OpKind::iter, {params[i]}, a, fresh(), {}, post ? Stage::post : Stage::loop);
    };
    auto add_op = [&](const Op& op, std::vector<ValueId>& where, Stage stage, OpKind kind,
                      Attrs attrs) {
      std::vector<ValueId> in;
      for (ValueId v : op.inputs) in.push_back(where[v]);
      return bb.add(kind, in, std::move(attrs), fresh(), {}, stage);
    };
    // Loop stage: iterators, operators, accumulators.
    for (size_t i = 0; i < operands_.size(); ++i)
      if (need[operands_[i]] & kNeedLoop) add_iter(i, false);
    std::vector<ValueId> accumulated(p_.values.size(), -1);
    for (int i : ops_) {
      const Op& op = p_.ops[i];
      ValueId out = op.outputs[0];
      if (accumulating[i]) {
        if (!need[out]) continue;
        // mean over the loop axis: per-iteration sums, accumulated, scaled after the loop.
        OpKind kind = op.kind == OpKind::mean ? OpKind::sum : op.kind;
        ValueId t = add_op(op, in_loop, Stage::loop, kind, op.attrs);
        accumulated[out] = bb.add(OpKind::accum_sum, {t}, {}, fresh(), {}, Stage::loop);
      } else if (need[out] & kNeedLoop) {
        in_loop[out] = add_op(op, in_loop, Stage::loop, op.kind, op.attrs);
      }
    }
    // Post stage: iterators, operators (an accumulated mean's scale), saves.
    for (size_t i = 0; i < operands_.size(); ++i)
      if (need[operands_[i]] & kNeedPost) add_iter(i, true);
    for (int i : ops_) {
      const Op& op = p_.ops[i];
      ValueId out = op.outputs[0];
      if (!(need[out] & kNeedPost)) continue;
      if (accumulating[i]) {
        in_post[out] = accumulated[out];
        if (op.kind == OpKind::mean) {
          size_t dim = static_cast<size_t>(op.attrs.get_int("dim"));
          Attrs a;
          a.set("factor", *Rational::make(1, p_.type(op.inputs[0]).shape[dim]));
          in_post[out] = bb.add(OpKind::scale, {accumulated[out]}, a, fresh(), {}, Stage::post);
        }
      } else {
        in_post[out] = add_op(op, in_post, Stage::post, op.kind, op.attrs);
      }
    }
    for (ValueId r : results_) {
      std::vector<int64_t> omap = {-1, -1, -1};
      for (size_t g = 0; g < s.grid_classes.size(); ++g)
        omap[g] = static_cast<int64_t>(dims_in(r, s.grid_classes[g])[0]);
      Attrs a;
      a.set("omap", omap);
      bb.add(OpKind::save, {in_post[r]}, a, p_.value(r).name, {}, Stage::post);
    }
    FusedRegion fused;
    fused.operands = operands_;
    fused.results = results_;
    fused.body = std::move(bb).finish();
    // The kernel alone, checked and costed on the target.
    GraphBuilder kb(Level::kernel, "region");
    std::vector<ValueId> ins;
    for (ValueId v : operands_) ins.push_back(kb.add_input(p_.value(v).name, p_.type(v)));
    std::vector<std::string> names;
    for (ValueId r : results_) names.push_back(p_.value(r).name);
    std::vector<ValueId> outs = kb.add_nested(OpKind::kernel, ins, fused.body, names);
    for (size_t i = 0; i < outs.size(); ++i) {
      if (!(kb.graph().type(outs[i]) == p_.type(results_[i]))) return std::nullopt;
      kb.add_output(outs[i]);
    }
    Graph k = std::move(kb).finish();
    if (!check_graph(k, target_).empty()) return std::nullopt;
    fused.predicted_s = predict(k, target_).total_s;
    return fused;
  }

  const Graph& p_;
  std::vector<int> ops_;
  const Target& target_;
  FuseOptions options_;
  std::vector<ValueId> operands_, results_, values_;
  std::vector<int> offset_, parent_;
  std::set<int> reduced_;
  std::vector<int> classes_;
  std::map<int, int64_t> class_size_;
};

}  // namespace

bool region_runs(const Op& op) {
  const OpInfo& info = op_info(op.kind);
  switch (info.fusion) {
    case FusionPattern::elementwise:
    case FusionPattern::broadcast:
    case FusionPattern::out_elementwise_fusable:
      return true;
    case FusionPattern::reduction:
      // Block graphs' accumulators share the pattern but are no kernel-level operators.
      return info.op_class == OpClass::reduction && op.attrs.get_int("to") == 1;
    case FusionPattern::injective:
    case FusionPattern::opaque:
      return false;
  }
  return false;
}

std::optional<FusedRegion> fuse_region(const Graph& program, const std::vector<int>& ops,
                                       const Target& target, const FuseOptions& options) {
  return RegionFuser(program, ops, target, options).run();
}

}  // namespace weft
