// Split-reduction variants: a block graph's for-loop spread over more blocks, partial results
// combined at the kernel level.
#include "search/split_reduction.h"

#include <algorithm>

namespace weft {
namespace {

const DimClasses& no_classes() {
  static const DimClasses none;
  return none;
}

Rational constant_of(const SketchOp& op, const SearchConstants& constants) {
  if (op.kind == OpKind::scale) return constants.factors.at(static_cast<size_t>(op.constant));
  if (op.kind == OpKind::shift) return constants.offsets.at(static_cast<size_t>(op.constant));
  return Rational();
}

}  // namespace

std::vector<ReplayedValue> replay_block_graph(const BlockSketch& sk,
                                              const std::vector<TensorType>& operand_types,
                                              const std::vector<TermRef>& operand_terms,
                                              const SearchConstants& constants,
                                              ExprOracle& oracle) {
  std::vector<ReplayedValue> vals;
  for (size_t i = 0; i < operand_types.size(); ++i)
    vals.push_back({to_stype(iter_tile_type(operand_types[i], sk.schedule.iters[i], sk.schedule)),
                    operand_terms[i]});
  for (const SketchOp& op : sk.ops) {
    const ReplayedValue& a = vals.at(static_cast<size_t>(op.a));
    const ReplayedValue* b = op.b >= 0 ? &vals.at(static_cast<size_t>(op.b)) : nullptr;
    ReplayedValue r;
    int64_t k = 0;
    bool ok = infer_search_op(op.kind, a.type, b ? &b->type : nullptr, op.dim, sk.schedule.loop,
                              no_classes(), r.type, k);
    WEFT_CHECK(ok, "replaying a block graph the search built: {} does not fit its operands",
               op_info(op.kind).name);
    r.term = oracle.op_term(op.kind, a.term, b ? b->term : 0, k, constant_of(op, constants));
    vals.push_back(r);
  }
  return vals;
}

std::vector<SplitVariant> split_reduction_variants(const BlockSketch& sk,
                                                   const std::vector<TensorType>& operand_types,
                                                   const std::vector<TermRef>& operand_terms,
                                                   const SearchConfig& config,
                                                   const SearchConstants& constants,
                                                   ExprOracle& oracle) {
  std::vector<SplitVariant> out;
  const BlockSchedule& s = sk.schedule;
  const int n_iters = static_cast<int>(operand_types.size());
  const std::vector<int64_t> factors = loop_split_factors(s, config);
  if (factors.empty() || sk.saves.empty()) return out;
  int free_dim = -1;
  for (int g = 0; g < 3 && free_dim < 0; ++g)
    if (s.grid[g] == 1) free_dim = g;

  // The accumulators the rest of the block graph reads or saves, and the post-loop operators.
  std::vector<bool> needed(static_cast<size_t>(n_iters) + sk.ops.size(), false);
  std::vector<int> post_ops;
  for (size_t j = 0; j < sk.ops.size(); ++j) {
    const SketchOp& op = sk.ops[j];
    if (is_accumulator(op.kind)) {
      if (op.kind != OpKind::accum_sum) return out;  // only sums split
      continue;
    }
    if (op.stage != Stage::post) continue;
    post_ops.push_back(static_cast<int>(j));
    for (int v : {static_cast<int>(op.a), static_cast<int>(op.b)}) {
      if (v < 0) continue;
      if (v < n_iters) return out;  // a post-loop iterator: the whole tensor at kernel level
      const SketchOp& producer = sk.ops[static_cast<size_t>(v - n_iters)];
      if (is_accumulator(producer.kind)) needed[static_cast<size_t>(v)] = true;
    }
  }
  for (const SketchSave& sv : sk.saves) {
    const SketchOp& producer = sk.ops.at(static_cast<size_t>(sv.value - n_iters));
    if (is_accumulator(producer.kind)) needed[static_cast<size_t>(sv.value)] = true;
  }
  std::vector<int> partials;  // block values saved as partial results
  for (size_t v = 0; v < needed.size(); ++v)
    if (needed[v]) partials.push_back(static_cast<int>(v));
  if (partials.empty()) return out;
  const std::array<int8_t, 3>& omap0 = sk.saves.front().omap;

  for (int64_t f : factors) {
    SplitVariant var;
    BlockSketch& p = var.partial;
    p.schedule = s;
    p.schedule.grid[free_dim] = f;
    p.schedule.loop = s.loop / f;
    bool ok = true;
    for (int i = 0; i < n_iters && ok; ++i) {
      IterChoice& c = p.schedule.iters[static_cast<size_t>(i)];
      if (c.post || c.fmap < 0) continue;
      for (int g = 0; g < 3; ++g) ok &= c.imap[g] != c.fmap;
      c.imap[free_dim] = c.fmap;  // the blocks cut the walked dim; each walks its slice
    }
    if (!ok) continue;
    // Keep the loop body and the accumulators; the post-loop part moves to the kernel graph.
    for (const SketchOp& op : sk.ops)
      if (op.stage == Stage::loop) p.ops.push_back(op);
    std::vector<ReplayedValue> vals =
        replay_block_graph(p, operand_types, operand_terms, constants, oracle);

    // Save each partial accumulator: existing grid dims as the original saves place them, the
    // new one along a size-1 dim if there is one (combined by a plain sum), else along a free dim
    // holding one tile per block (combined by a sum to the tile size).
    std::vector<int> kernel_value(needed.size(), -1);
    for (int v : partials) {
      const ReplayedValue& rv = vals.at(static_cast<size_t>(v));
      SketchSave sv;
      sv.value = static_cast<int8_t>(v);
      int8_t split_dim = -1;
      for (int g = 0; g < 3; ++g)
        if (g != free_dim && s.grid[g] > 1) {
          if (omap0[g] < 0 || omap0[g] >= rv.type.rank) ok = false;
          sv.omap[g] = omap0[g];
        }
      if (!ok) break;
      auto taken = [&](int d) {
        for (int g = 0; g < 3; ++g)
          if (sv.omap[g] == d) return true;
        return false;
      };
      for (int d = 0; d < rv.type.rank && split_dim < 0; ++d)
        if (!taken(d) && rv.type.d[d] == 1) split_dim = static_cast<int8_t>(d);
      for (int d = 0; d < rv.type.rank && split_dim < 0; ++d)
        if (!taken(d)) split_dim = static_cast<int8_t>(d);
      if (split_dim < 0) {
        ok = false;
        break;
      }
      sv.omap[free_dim] = split_dim;
      SType t = rv.type;
      int64_t tile = t.d[split_dim];
      t.cls.fill(kAnyClass);
      for (int g = 0; g < 3; ++g)
        if (sv.omap[g] >= 0) t.d[sv.omap[g]] *= p.schedule.grid[g];
      if (tile > 1) {
        t.part[split_dim] = tile;
        t.part_cls[split_dim] = kAnyClass;
      }
      p.saves.push_back(sv);
      p.output_types.push_back(to_tensor_type(t));
      p.output_terms.push_back(rv.term);
      p.output_classes.push_back(t.cls);
      p.output_parts.push_back(t.part);
      p.output_part_classes.push_back(t.part_cls);
      TailOp combine;
      combine.kind = OpKind::sum;
      combine.inputs = {static_cast<int>(p.saves.size()) - 1};
      combine.dim = split_dim;
      combine.to = tile;
      var.tail.push_back(combine);
      kernel_value[static_cast<size_t>(v)] =
          static_cast<int>(partials.size() + var.tail.size()) - 1;
    }
    if (!ok || p.saves.size() > static_cast<size_t>(config.max_block_outputs)) continue;
    // The post-loop operators, now on whole tensors.
    const int n_partials = static_cast<int>(partials.size());
    for (int j : post_ops) {
      const SketchOp& op = sk.ops[static_cast<size_t>(j)];
      TailOp t;
      t.kind = op.kind;
      t.dim = op.dim;
      t.constant = op.constant;
      for (int v : {static_cast<int>(op.a), static_cast<int>(op.b)})
        if (v >= 0) t.inputs.push_back(kernel_value.at(static_cast<size_t>(v)));
      var.tail.push_back(t);
      kernel_value[static_cast<size_t>(n_iters + j)] =
          n_partials + static_cast<int>(var.tail.size()) - 1;
    }
    var.kernel_value = std::move(kernel_value);
    out.push_back(std::move(var));
  }
  return out;
}

BlockSketch combine_kernel(const BlockSketch& original, const SplitVariant& var,
                           const std::function<ReplayedValue(int)>& value) {
  BlockSketch c;
  c.schedule.grid = original.schedule.grid;
  c.schedule.loop = 1;
  for (const SketchSave& sv : var.partial.saves) {
    IterChoice it;
    it.post = true;
    for (int g = 0; g < 3; ++g)
      if (original.schedule.grid[g] > 1) it.imap[g] = sv.omap[g];
    c.schedule.iters.push_back(it);
  }
  for (const TailOp& t : var.tail) {
    SketchOp op;
    op.kind = t.kind;
    op.a = static_cast<int8_t>(t.inputs.at(0));
    op.b = t.inputs.size() > 1 ? static_cast<int8_t>(t.inputs[1]) : int8_t{-1};
    op.dim = t.dim;
    op.constant = t.constant;
    op.stage = Stage::post;
    op.to = t.to;
    c.ops.push_back(op);
  }
  // The block values the original saves hold: in the tail, in the same order.
  for (const SketchSave& sv : original.saves) {
    const int tail_value = var.kernel_value.at(static_cast<size_t>(sv.value));
    SketchSave save;
    save.value = static_cast<int8_t>(tail_value);
    save.omap = sv.omap;
    c.saves.push_back(save);
    const ReplayedValue v = value(tail_value);
    c.output_types.push_back(to_tensor_type(v.type));
    c.output_terms.push_back(v.term);
    c.output_classes.push_back(v.type.cls);
    c.output_parts.push_back(v.type.part);
    c.output_part_classes.push_back(v.type.part_cls);
  }
  return c;
}

}  // namespace weft
