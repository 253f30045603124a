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
  int64_t loop = 1;     // iterations per block
  // Split reduction (split-K, FlashDecoding's split KV): the loop's range is divided over `split`
  // blocks along the next free grid dim; the kernel saves partial accumulators and kernel-level
  // operators sum them (`sum(.., to=tile)`) and apply the post-loop operators. 1: no split.
  int64_t split = 1;
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
        case OpClass::model:
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
      for (const auto& gs : sizes) {
        int64_t blocks = 1;
        for (int64_t g : gs) blocks *= g;
        for (const auto& [lc, f] : loops) {
          out.push_back(Schedule{set, gs, lc, f, 1});
          // Splits only where the grid leaves most SMs idle (the point of splitting) and a grid
          // dim is free; each block keeps at least two iterations.
          if (!options_.split_reductions || lc < 0 || set.size() >= 3 || blocks >= target_.sm_count)
            continue;
          for (int64_t split : divisors(f))
            if (split >= 2 && f / split >= 2 && blocks * split <= options_.max_blocks)
              out.push_back(Schedule{set, gs, lc, f / split, split});
        }
      }
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
    const bool split = s.split > 1;
    const size_t split_dim = s.grid_classes.size();  // the grid dim the split uses
    if (split) grid[split_dim] = s.split;
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
    // The kernel's inputs: every operand, or when split the loop's only (the post-loop
    // operators run at kernel level on whole tensors).
    std::vector<ValueId> params(operands_.size(), -1);
    std::vector<size_t> kernel_inputs;
    for (size_t i = 0; i < operands_.size(); ++i) {
      if (split && !(need[operands_[i]] & kNeedLoop)) continue;
      params[i] = bb.add_input(p_.value(operands_[i]).name, p_.type(operands_[i]));
      kernel_inputs.push_back(i);
    }
    // The block value of each program value, per stage.
    std::vector<ValueId> in_loop(p_.values.size(), -1), in_post(p_.values.size(), -1);
    auto add_iter = [&](size_t i, bool post) {
      ValueId v = operands_[i];
      std::vector<int64_t> imap = grid_map(v, s);
      int64_t fmap = -1;
      if (!post && carries(v, s.loop_class))
        fmap = static_cast<int64_t>(dims_in(v, s.loop_class)[0]);
      // Split: the blocks along the split dim cut the walked dim; each walks its own slice.
      if (split && fmap >= 0) imap[split_dim] = fmap;
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
    FusedRegion fused;
    fused.operands = operands_;
    fused.results = results_;
    GraphBuilder kb(Level::kernel, "region");
    std::vector<ValueId> kernel_value(p_.values.size(), -1);
    for (ValueId v : operands_) kernel_value[v] = kb.add_input(p_.value(v).name, p_.type(v));
    std::vector<ValueId> ins;
    for (size_t i : kernel_inputs) ins.push_back(kernel_value[operands_[i]]);
    if (!split) {
      // Post stage: iterators, operators (an accumulated mean's scale), saves.
      for (size_t i = 0; i < operands_.size(); ++i)
        if (need[operands_[i]] & kNeedPost) add_iter(i, true);
      for (int i : ops_) {
        const Op& op = p_.ops[i];
        ValueId out = op.outputs[0];
        if (!(need[out] & kNeedPost)) continue;
        if (accumulating[i]) {
          in_post[out] = accumulated[out];
          if (op.kind == OpKind::mean)
            in_post[out] = bb.add(OpKind::scale, {accumulated[out]}, {mean_scale(op)}, fresh(), {},
                                  Stage::post);
        } else {
          in_post[out] = add_op(op, in_post, Stage::post, op.kind, op.attrs);
        }
      }
      save_results(bb, s, in_post);
      fused.body = std::move(bb).finish();
      std::vector<std::string> names;
      for (ValueId r : results_) names.push_back(p_.value(r).name);
      std::vector<ValueId> outs = kb.add_nested(OpKind::kernel, ins, fused.body, names);
      for (size_t i = 0; i < outs.size(); ++i) kernel_value[results_[i]] = outs[i];
    } else if (!build_split(s, need, accumulating, accumulated, split_dim, bb, kb, ins,
                            kernel_value, fused)) {
      return std::nullopt;
    }
    for (ValueId r : results_) {
      if (kernel_value[r] < 0 || !(kb.graph().type(kernel_value[r]) == p_.type(r)))
        return std::nullopt;
      kb.add_output(kernel_value[r]);
    }
    fused.kernels = std::move(kb).finish();
    // The kernels alone, checked and costed on the target.
    if (!check_graph(fused.kernels, target_).empty()) return std::nullopt;
    fused.predicted_s = predict(fused.kernels, target_).total_s;
    return fused;
  }

  // Where the grid's dims cut `v`: per grid dim in use, v's dim of that axis class (-1: none).
  std::vector<int64_t> grid_map(ValueId v, const Schedule& s) {
    std::vector<int64_t> map = {-1, -1, -1};
    for (size_t g = 0; g < s.grid_classes.size(); ++g) {
      std::vector<size_t> d = dims_in(v, s.grid_classes[g]);
      if (!d.empty()) map[g] = static_cast<int64_t>(d[0]);
    }
    return map;
  }

  // Saves the results (block values `in_post`) where the grid places them.
  void save_results(GraphBuilder& b, const Schedule& s, const std::vector<ValueId>& in_post) {
    for (ValueId r : results_) {
      Attrs a;
      a.set("omap", grid_map(r, s));
      b.add(OpKind::save, {in_post[r]}, a, p_.value(r).name, {}, Stage::post);
    }
  }

  // An accumulated mean's scale: 1 / (elements reduced).
  Attrs mean_scale(const Op& mean) const {
    size_t dim = static_cast<size_t>(mean.attrs.get_int("dim"));
    Attrs a;
    a.set("factor", *Rational::make(1, p_.type(mean.inputs[0]).shape[dim]));
    return a;
  }

  // The split form's kernel graph: the block graph (loop stage already built in `bb`) saves each
  // accumulator the post stage needs as partial results, one slice per split block side by side
  // along a dim the grid leaves free (a size-1 dim if there is one); kernel operators sum the
  // slices (`sum(.., to=tile)`: element g sums g, g + tile, ...) and run the post-loop operators
  // on whole tensors. False when an accumulator is not cut like the grid (its partials would
  // overlap) or has no free dim.
  bool build_split(const Schedule& s, const std::vector<uint8_t>& need,
                   const std::vector<bool>& accumulating, const std::vector<ValueId>& accumulated,
                   size_t split_dim, GraphBuilder& bb, GraphBuilder& kb,
                   const std::vector<ValueId>& ins, std::vector<ValueId>& kernel_value,
                   FusedRegion& fused) {
    // Names of the partial results: fresh in the program (the caller inlines them into it).
    std::set<std::string> names;
    for (const Value& v : p_.values) names.insert(v.name);
    auto fresh_name = [&](ValueId v, const char* what) {
      for (int k = 0;; ++k) {
        std::string n = fmt::format("{}.{}{}", p_.value(v).name, what, k);
        if (names.insert(n).second) return n;
      }
    };
    struct Partial {
      int op;
      int64_t dim, tile;
    };
    std::vector<Partial> partials;
    std::vector<std::string> partial_names;
    for (int i : ops_) {
      const Op& op = p_.ops[i];
      ValueId out = op.outputs[0];
      if (!accumulating[i] || !(need[out] & kNeedPost)) continue;
      std::vector<int64_t> omap = {-1, -1, -1};
      for (size_t g = 0; g < s.grid_classes.size(); ++g) {
        std::vector<size_t> d = dims_in(out, s.grid_classes[g]);
        if (d.empty()) return false;
        omap[g] = static_cast<int64_t>(d[0]);
      }
      const Shape& shape = p_.type(out).shape;
      auto free = [&](size_t d) { return std::find(omap.begin(), omap.end(), d) == omap.end(); };
      int64_t dim = -1;
      for (size_t d = 0; d < shape.size() && dim < 0; ++d)
        if (free(d) && shape[d] == 1) dim = static_cast<int64_t>(d);
      for (size_t d = 0; d < shape.size() && dim < 0; ++d)
        if (free(d)) dim = static_cast<int64_t>(d);
      if (dim < 0) return false;
      omap[split_dim] = dim;
      Attrs a;
      a.set("omap", omap);
      partial_names.push_back(fresh_name(out, "partial"));
      bb.add(OpKind::save, {accumulated[out]}, a, partial_names.back(), {}, Stage::post);
      partials.push_back(Partial{i, dim, shape[static_cast<size_t>(dim)]});
    }
    if (partials.empty()) return false;
    fused.body = std::move(bb).finish();
    std::vector<ValueId> partial_values =
        kb.add_nested(OpKind::kernel, ins, fused.body, partial_names);
    // The combine kernel: the original grid without the split, no loop; each block sums its
    // tile's partial slices (`sum(.., to=tile)`: element g sums g, g + tile, ...) and runs the
    // post-loop operators on them and on the operands they read.
    std::array<int64_t, 3> grid = {1, 1, 1};
    for (size_t g = 0; g < s.grid_sizes.size(); ++g) grid[g] = s.grid_sizes[g];
    GraphBuilder cb(Level::block);
    cb.set_block_params(grid, options_.threads, 1);
    std::set<std::string> taken;
    for (const std::string& n : partial_names) taken.insert(n);
    for (ValueId v : operands_) taken.insert(p_.value(v).name);
    for (ValueId v : results_) taken.insert(p_.value(v).name);
    int next = 0;
    auto fresh = [&] {
      for (;;) {
        std::string n = fmt::format("c{}", next++);
        if (taken.insert(n).second) return n;
      }
    };
    std::vector<ValueId> combine_inputs;
    std::vector<ValueId> in_post(p_.values.size(), -1);
    for (size_t k = 0; k < partials.size(); ++k) {
      const Op& op = p_.ops[static_cast<size_t>(partials[k].op)];
      ValueId out = op.outputs[0];
      combine_inputs.push_back(partial_values[k]);
      ValueId param = cb.add_input(partial_names[k], kb.graph().type(partial_values[k]));
      Attrs it;
      it.set("imap", grid_map(out, s));
      it.set("fmap", int64_t{-1});
      ValueId tile = cb.add(OpKind::iter, {param}, it, fresh(), {}, Stage::post);
      Attrs a;
      a.set("dim", partials[k].dim);
      a.set("to", partials[k].tile);
      in_post[out] = cb.add(OpKind::sum, {tile}, a, fresh(), {}, Stage::post);
      if (op.kind == OpKind::mean)
        in_post[out] =
            cb.add(OpKind::scale, {in_post[out]}, mean_scale(op), fresh(), {}, Stage::post);
    }
    for (size_t i = 0; i < operands_.size(); ++i) {
      ValueId v = operands_[i];
      if (!(need[v] & kNeedPost)) continue;
      combine_inputs.push_back(kernel_value[v]);
      ValueId param = cb.add_input(p_.value(v).name, p_.type(v));
      Attrs it;
      it.set("imap", grid_map(v, s));
      it.set("fmap", int64_t{-1});
      in_post[v] = cb.add(OpKind::iter, {param}, it, fresh(), {}, Stage::post);
    }
    for (int i : ops_) {
      const Op& op = p_.ops[i];
      ValueId out = op.outputs[0];
      if (accumulating[i] || !(need[out] & kNeedPost)) continue;
      std::vector<ValueId> in;
      for (ValueId v : op.inputs) in.push_back(in_post[v]);
      in_post[out] = cb.add(op.kind, in, op.attrs, fresh(), {}, Stage::post);
    }
    save_results(cb, s, in_post);
    std::vector<std::string> result_names;
    for (ValueId r : results_) result_names.push_back(p_.value(r).name);
    std::vector<ValueId> outs =
        kb.add_nested(OpKind::kernel, combine_inputs, std::move(cb).finish(), result_names);
    for (size_t k = 0; k < results_.size(); ++k) kernel_value[results_[k]] = outs[k];
    return true;
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
