// The search's sketches made into IR graphs (block graphs of graph-defined kernels).
#include "search/materialize.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "core/error.h"

namespace weft {

Attrs sketch_op_attrs(OpKind kind, int dim, int constant, int64_t to,
                      const SearchConstants& constants) {
  Attrs a;
  if (op_info(kind).op_class == OpClass::reduction || kind == OpKind::accum_concat)
    a.set("dim", int64_t{dim});
  if (op_info(kind).op_class == OpClass::reduction && to != 1) a.set("to", to);
  if (kind == OpKind::scale) a.set("factor", constants.factors[static_cast<size_t>(constant)]);
  if (kind == OpKind::shift) a.set("offset", constants.offsets[static_cast<size_t>(constant)]);
  return a;
}

namespace {

struct BlockInputs {
  const BlockSketch& sketch;
  const std::vector<TensorType>& operand_types;
  const std::vector<std::string>& operand_names;
  const std::vector<std::string>& out_names;
  const SearchConstants& constants;
  int64_t threads;
};

// The block graph, with the sums marked in `means` left out and their scales made means; `ids`
// receives each sketch value's graph value.
Graph build_block(const BlockInputs& b, const std::vector<char>& means, std::vector<ValueId>& ids) {
  const BlockSketch& sk = b.sketch;
  const size_t n = b.operand_types.size();
  GraphBuilder bb(Level::block);
  bb.set_block_params(sk.schedule.grid, b.threads, sk.schedule.loop);
  std::vector<ValueId> params;
  for (size_t i = 0; i < n; ++i)
    params.push_back(bb.add_input(b.operand_names[i], b.operand_types[i]));
  // Block values are vN, made distinct from the operands' and results' names (a program may
  // name its own values vN).
  std::set<std::string> taken(b.out_names.begin(), b.out_names.end());
  taken.insert(b.operand_names.begin(), b.operand_names.end());
  auto block_name = [&](size_t v) {
    std::string name = fmt::format("v{}", v);
    while (taken.count(name)) name += "_";
    return name;
  };
  // Loop-stage iterators first, post-stage ones just before the first post-stage operator, so
  // the graph lists its loop before what comes after it.
  ids.assign(n + sk.ops.size(), -1);
  auto add_iters = [&](bool post) {
    for (size_t i = 0; i < n; ++i) {
      const IterChoice& c = sk.schedule.iters[i];
      if (c.post != post) continue;
      Attrs a;
      a.set("imap", std::vector<int64_t>(c.imap.begin(), c.imap.end()));
      a.set("fmap", int64_t{c.fmap});
      ids[i] =
          bb.add(OpKind::iter, {params[i]}, a, block_name(i), {}, post ? Stage::post : Stage::loop);
    }
  };
  add_iters(false);
  bool post_started = false;
  for (size_t j = 0; j < sk.ops.size(); ++j) {
    const SketchOp& op = sk.ops[j];
    if (op.stage == Stage::post && !post_started) {
      add_iters(true);
      post_started = true;
    }
    const size_t v = n + j;
    if (!means.empty() && means[j]) continue;  // emitted as the mean its scale makes of it
    const bool mean = op.kind == OpKind::scale && !means.empty() &&
                      static_cast<size_t>(op.a) >= n && means[static_cast<size_t>(op.a) - n];
    if (mean) {
      const SketchOp& sum = sk.ops[static_cast<size_t>(op.a) - n];
      ids[v] = bb.add(OpKind::mean, {ids[static_cast<size_t>(sum.a)]},
                      sketch_op_attrs(OpKind::mean, sum.dim, -1, sum.to, b.constants),
                      block_name(v), {}, op.stage);
      continue;
    }
    std::vector<ValueId> in{ids[static_cast<size_t>(op.a)]};
    if (op.b >= 0) in.push_back(ids[static_cast<size_t>(op.b)]);
    ids[v] = bb.add(op.kind, in, sketch_op_attrs(op.kind, op.dim, op.constant, op.to, b.constants),
                    block_name(v), {}, op.stage);
  }
  if (!post_started) add_iters(true);
  for (size_t i = 0; i < sk.saves.size(); ++i) {
    Attrs a;
    a.set("omap", std::vector<int64_t>(sk.saves[i].omap.begin(), sk.saves[i].omap.end()));
    bb.add(OpKind::save, {ids[static_cast<size_t>(sk.saves[i].value)]}, a, b.out_names[i], {},
           Stage::post);
  }
  return std::move(bb).finish();
}

// Per sketch op: 1 where it is a sum that, with the one scale using it, makes a mean.
std::vector<char> sums_that_are_means(const BlockInputs& b, const Graph& g,
                                      const std::vector<ValueId>& ids) {
  const BlockSketch& sk = b.sketch;
  const size_t n = b.operand_types.size();
  std::vector<int> uses(n + sk.ops.size(), 0);
  for (const SketchOp& op : sk.ops) {
    if (op.a >= 0) ++uses[static_cast<size_t>(op.a)];
    if (op.b >= 0) ++uses[static_cast<size_t>(op.b)];
  }
  for (const SketchSave& save : sk.saves) ++uses[static_cast<size_t>(save.value)];
  std::vector<char> means(sk.ops.size(), 0);
  for (const SketchOp& op : sk.ops) {
    if (op.kind != OpKind::scale || op.a < 0 || static_cast<size_t>(op.a) < n) continue;
    const size_t j = static_cast<size_t>(op.a) - n;
    const SketchOp& sum = sk.ops[j];
    if (sum.kind != OpKind::sum || sum.stage != op.stage || uses[static_cast<size_t>(op.a)] != 1)
      continue;
    const Shape& in = g.type(ids[static_cast<size_t>(sum.a)]).shape;
    const int64_t group = in[static_cast<size_t>(sum.dim)] / sum.to;
    if (b.constants.factors[static_cast<size_t>(op.constant)] == Rational::make(1, group))
      means[j] = 1;
  }
  return means;
}

}  // namespace

Graph materialize_block(const BlockSketch& sketch, const std::vector<TensorType>& operand_types,
                        const std::vector<std::string>& operand_names,
                        const std::vector<std::string>& out_names, const SearchConstants& constants,
                        int64_t threads) {
  const BlockInputs b{sketch, operand_types, operand_names, out_names, constants, threads};
  std::vector<ValueId> ids;
  Graph g = build_block(b, {}, ids);
  const std::vector<char> means = sums_that_are_means(b, g, ids);
  if (std::find(means.begin(), means.end(), 1) != means.end()) g = build_block(b, means, ids);
  for (size_t i = 0; i < sketch.output_types.size(); ++i)
    WEFT_CHECK(g.type(g.outputs[i]) == sketch.output_types[i],
               "search type rules disagree with the op table: {} vs {}", g.type(g.outputs[i]).str(),
               sketch.output_types[i].str());
  return g;
}

}  // namespace weft
