// Vertical merging of graph-defined kernels whose blocks hand each other whole tiles.
#include "search/merge_kernels.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>

#include <fmt/format.h>

#include "core/error.h"

namespace weft {
namespace {

bool all_after_loop(const Graph& body) {
  return std::all_of(body.ops.begin(), body.ops.end(),
                     [](const Op& op) { return op.stage == Stage::post; });
}

// Whether the block graph's iterator `it` loads, in each block, exactly the tile that the same
// block of `producer_body` saved with `save`.
bool reads_saved_tile(const Graph& producer_body, const Op& save, const Graph& consumer_body,
                      const Op& it) {
  if (it.stage != Stage::post || it.attrs.get_int_or("fmap", -1) != -1) return false;
  const std::vector<int64_t>& omap = save.attrs.get_list("omap");
  const std::vector<int64_t>& imap = it.attrs.get_list("imap");
  for (size_t d = 0; d < 3; ++d) {
    if (consumer_body.grid[d] == 1) continue;
    if (d >= omap.size() || d >= imap.size() || omap[d] < 0 || omap[d] != imap[d]) return false;
  }
  return producer_body.type(save.inputs[0]) == consumer_body.type(it.outputs[0]);
}

// The values reachable from `from`'s results in the kernel graph `g`, `from` excluded.
std::vector<bool> reachable_from(const Graph& g, int from) {
  std::vector<bool> reached(g.values.size(), false);
  for (ValueId v : g.ops[from].outputs) reached[v] = true;
  for (size_t i = static_cast<size_t>(from) + 1; i < g.ops.size(); ++i) {
    const Op& op = g.ops[i];
    if (std::any_of(op.inputs.begin(), op.inputs.end(), [&](ValueId v) { return reached[v]; }))
      for (ValueId v : op.outputs) reached[v] = true;
  }
  return reached;
}

// Two kernels of a kernel graph that can merge, and how.
struct Pair {
  int producer = 0, consumer = 0;
  int64_t loop = 1;
  std::map<ValueId, ValueId> produced;  // producer's result -> its block value saved
  std::map<ValueId, ValueId> alias;     // consumer's iterator tile -> producer's block value
  std::set<ValueId> kept;               // producer's results still written
  std::vector<ValueId> operands;        // of the merged kernel
  std::vector<ValueId> results;         // of the merged kernel
};

std::optional<Pair> plan_pair(const Graph& g, int producer, int consumer) {
  const Op& kp = g.ops[producer];
  const Op& kc = g.ops[consumer];
  if (kp.kind != OpKind::kernel || kc.kind != OpKind::kernel || producer >= consumer) return {};
  const Graph& bp = *kp.body;
  const Graph& bc = *kc.body;
  if (bp.grid != bc.grid) return {};
  if (bp.loop != bc.loop && !(bp.loop == 1 && all_after_loop(bp)) &&
      !(bc.loop == 1 && all_after_loop(bc)))
    return {};
  Pair pair;
  pair.producer = producer;
  pair.consumer = consumer;
  pair.loop = std::max(bp.loop, bc.loop);
  std::map<ValueId, ValueId>& produced = pair.produced;
  std::map<ValueId, ValueId>& alias = pair.alias;
  std::set<ValueId>& kept = pair.kept;
  std::vector<ValueId>& operands = pair.operands;
  std::vector<ValueId>& results = pair.results;

  // Which of the consumer's operands are the producer's results, and the producer's saved
  // value (in its block graph) that each such operand's iterators stand for.
  for (size_t k = 0; k < kp.outputs.size(); ++k) {
    const Op* save = nullptr;
    for (const Op& op : bp.ops)
      if (op.kind == OpKind::save && op.outputs[0] == bp.outputs[k]) save = &op;
    if (save == nullptr) return {};
    produced[kp.outputs[k]] = save->inputs[0];
  }
  bool reads_producer = false;
  for (const Op& op : bc.ops) {
    if (op.kind != OpKind::iter) continue;
    ValueId operand =
        kc.inputs[std::find(bc.inputs.begin(), bc.inputs.end(), op.inputs[0]) - bc.inputs.begin()];
    auto p = produced.find(operand);
    if (p == produced.end()) continue;
    const Op* save = nullptr;
    for (const Op& s : bp.ops)
      if (s.kind == OpKind::save && s.inputs[0] == p->second) save = &s;
    if (save == nullptr || !reads_saved_tile(bp, *save, bc, op)) return {};
    alias[op.outputs[0]] = p->second;
    reads_producer = true;
  }
  if (!reads_producer) return {};

  // No other path from the producer to the consumer (the merged kernel would be its own
  // ancestor).
  std::vector<bool> reached = reachable_from(g, producer);
  for (ValueId v : kc.inputs)
    if (reached[v] && !produced.count(v)) return {};

  // The producer's results still needed: read by another op, or program outputs.
  for (ValueId v : kp.outputs) {
    bool needed = std::count(g.outputs.begin(), g.outputs.end(), v) > 0;
    for (size_t i = 0; i < g.ops.size() && !needed; ++i)
      if (static_cast<int>(i) != consumer)
        needed = std::count(g.ops[i].inputs.begin(), g.ops[i].inputs.end(), v) > 0;
    if (needed) kept.insert(v);
  }

  // The merged kernel's operands: the producer's, then the consumer's others, each once.
  for (ValueId v : kp.inputs)
    if (std::find(operands.begin(), operands.end(), v) == operands.end()) operands.push_back(v);
  for (ValueId v : kc.inputs)
    if (!produced.count(v) && std::find(operands.begin(), operands.end(), v) == operands.end())
      operands.push_back(v);
  // Results: the producer's kept ones, then the consumer's, named as in `g`.
  for (ValueId v : kp.outputs)
    if (kept.count(v)) results.push_back(v);
  for (ValueId v : kc.outputs) results.push_back(v);
  return pair;
}

// The merged kernel's block graph: both kernels' loop stages, then what runs after the loop,
// producer before consumer (a kernel whose loop is 1 with everything after it joins the other's
// post stage); the consumer's iterators of the producer's results read its block values, and
// identical iterators load once.
Graph merged_body(const Graph& g, const Pair& pair, int64_t threads) {
  const Op& kp = g.ops[pair.producer];
  const Op& kc = g.ops[pair.consumer];
  const Graph& bp = *kp.body;
  const Graph& bc = *kc.body;
  const std::map<ValueId, ValueId>& produced = pair.produced;
  const std::map<ValueId, ValueId>& alias = pair.alias;
  const std::set<ValueId>& kept = pair.kept;

  std::set<std::string> reserved;
  for (ValueId v : pair.operands) reserved.insert(g.value(v).name);
  for (ValueId v : pair.results) reserved.insert(g.value(v).name);
  int next_name = 0;
  auto fresh = [&] {
    for (;;) {
      std::string n = fmt::format("b{}", next_name++);
      if (!reserved.count(n)) return n;
    }
  };

  GraphBuilder block(Level::block);
  block.set_block_params(bp.grid, threads, pair.loop);
  std::map<ValueId, ValueId> operand_of;  // kernel-level operand -> merged block input
  for (ValueId v : pair.operands) operand_of[v] = block.add_input(g.value(v).name, g.type(v));
  // Block values of each kernel -> merged block values; identical iterators are loaded once.
  std::vector<ValueId> pmap(bp.values.size(), -1), cmap(bc.values.size(), -1);
  for (size_t k = 0; k < bp.inputs.size(); ++k) pmap[bp.inputs[k]] = operand_of[kp.inputs[k]];
  for (size_t k = 0; k < bc.inputs.size(); ++k)
    if (!produced.count(kc.inputs[k])) cmap[bc.inputs[k]] = operand_of[kc.inputs[k]];
  struct Load {
    ValueId operand;
    const Attrs* attrs;
    Stage stage;
    ValueId tile;
  };
  std::vector<Load> loaded;
  auto emit = [&](const Op& op, std::vector<ValueId>& map, bool is_producer, Stage stage) {
    if (op.kind == OpKind::save) {
      ValueId result =
          is_producer ? kp.outputs[std::find(bp.outputs.begin(), bp.outputs.end(), op.outputs[0]) -
                                   bp.outputs.begin()]
                      : kc.outputs[std::find(bc.outputs.begin(), bc.outputs.end(), op.outputs[0]) -
                                   bc.outputs.begin()];
      if (is_producer && !kept.count(result)) return;
      map[op.outputs[0]] = block.add(OpKind::save, {map[op.inputs[0]]}, op.attrs,
                                     g.value(result).name, {}, Stage::post);
      return;
    }
    if (!is_producer && op.kind == OpKind::iter && alias.count(op.outputs[0])) {
      map[op.outputs[0]] = pmap[alias.at(op.outputs[0])];
      return;
    }
    std::vector<ValueId> ins;
    for (ValueId v : op.inputs) ins.push_back(map[v]);
    if (op.kind == OpKind::iter) {
      for (const Load& l : loaded)
        if (l.operand == ins[0] && l.stage == stage && *l.attrs == op.attrs) {
          map[op.outputs[0]] = l.tile;
          return;
        }
      map[op.outputs[0]] = block.add(OpKind::iter, ins, op.attrs, fresh(), {}, stage);
      loaded.push_back({ins[0], &op.attrs, stage, map[op.outputs[0]]});
      return;
    }
    std::vector<std::string> names;
    for (size_t k = 0; k < op.outputs.size(); ++k) names.push_back(fresh());
    std::vector<ValueId> outs = op.body ? block.add_nested(op.kind, ins, *op.body, names, {}, stage)
                                        : block.add_op(op.kind, ins, op.attrs, names, {}, stage);
    for (size_t k = 0; k < outs.size(); ++k) map[op.outputs[k]] = outs[k];
  };
  for (const Op& op : bp.ops)
    if (op.stage == Stage::loop) emit(op, pmap, true, Stage::loop);
  for (const Op& op : bc.ops)
    if (op.stage == Stage::loop) emit(op, cmap, false, Stage::loop);
  for (const Op& op : bp.ops)
    if (op.stage == Stage::post) emit(op, pmap, true, Stage::post);
  for (const Op& op : bc.ops)
    if (op.stage == Stage::post) emit(op, cmap, false, Stage::post);
  return std::move(block).finish();
}

// The kernel graph again, the merged kernel in the consumer's place; ops between the two that
// read the producer's kept results move after it (a stable topological order).
Graph with_merged_kernel(const Graph& g, const Pair& pair, const Graph& body) {
  const int producer = pair.producer, consumer = pair.consumer;
  const std::vector<ValueId>& operands = pair.operands;
  const std::vector<ValueId>& results = pair.results;
  GraphBuilder b(Level::kernel, g.name);
  std::vector<ValueId> map(g.values.size(), -1);
  for (ValueId v : g.inputs) map[v] = b.add_input(g.value(v).name, g.type(v));
  std::vector<int> order;
  std::vector<bool> placed(g.ops.size(), false), ready(g.values.size(), false);
  for (ValueId v : g.inputs) ready[v] = true;
  placed[producer] = true;  // emitted with the consumer
  for (size_t done = 1; done < g.ops.size();) {
    const size_t before = done;
    for (size_t i = 0; i < g.ops.size(); ++i) {
      if (placed[i]) continue;
      const Op& op = g.ops[i];
      const std::vector<ValueId>& ins = static_cast<int>(i) == consumer ? operands : op.inputs;
      if (!std::all_of(ins.begin(), ins.end(), [&](ValueId v) { return ready[v]; })) continue;
      placed[i] = true;
      ++done;
      order.push_back(static_cast<int>(i));
      if (static_cast<int>(i) == consumer)
        for (ValueId v : results) ready[v] = true;
      else
        for (ValueId v : op.outputs) ready[v] = true;
      break;
    }
    WEFT_CHECK(done > before, "merging kernels {} and {} left no op to place", producer, consumer);
  }
  for (int i : order) {
    const Op& op = g.ops[i];
    if (i == consumer) {
      std::vector<ValueId> ins;
      for (ValueId v : operands) ins.push_back(map[v]);
      std::vector<std::string> names;
      for (ValueId v : results) names.push_back(g.value(v).name);
      std::vector<ValueId> outs = b.add_nested(OpKind::kernel, ins, body, names);
      for (size_t k = 0; k < outs.size(); ++k) map[results[k]] = outs[k];
      continue;
    }
    std::vector<ValueId> ins;
    for (ValueId v : op.inputs) ins.push_back(map[v]);
    std::vector<std::string> names;
    for (ValueId v : op.outputs) names.push_back(g.value(v).name);
    std::vector<ValueId> outs = op.body ? b.add_nested(op.kind, ins, *op.body, names, {}, op.stage)
                                        : b.add_op(op.kind, ins, op.attrs, names, {}, op.stage);
    for (size_t k = 0; k < outs.size(); ++k) map[op.outputs[k]] = outs[k];
  }
  for (ValueId v : g.outputs) b.add_output(map[v]);
  return std::move(b).finish();
}

}  // namespace

std::optional<Graph> merge_kernel_pair(const Graph& g, int producer, int consumer,
                                       int64_t threads) {
  std::optional<Pair> pair = plan_pair(g, producer, consumer);
  if (!pair) return {};
  return with_merged_kernel(g, *pair, merged_body(g, *pair, threads));
}

std::vector<Graph> merge_kernels(const Graph& g) {
  std::vector<Graph> chain;
  const Graph* current = &g;
  for (;;) {
    std::optional<Graph> next;
    for (size_t c = 0; c < current->ops.size() && !next; ++c)
      for (size_t p = 0; p < c && !next; ++p) {
        const Op& kp = current->ops[p];
        const Op& kc = current->ops[c];
        if (kp.kind != OpKind::kernel || kc.kind != OpKind::kernel) continue;
        next = merge_kernel_pair(*current, static_cast<int>(p), static_cast<int>(c),
                                 std::max(kp.body->threads, kc.body->threads));
      }
    if (!next) return chain;
    chain.push_back(std::move(*next));
    current = &chain.back();
  }
}

}  // namespace weft
