// Op-by-op finite-field evaluation of kernel graphs with cached fingerprints of shared tensors.
#include "verify/fingerprint_cache.h"

#include "core/parallel.h"
#include "interp/interpreter.h"
#include "ir/expand_composites.h"
#include "verify/structural_hash.h"

namespace weft {
namespace {

// A kernel graph holding only `op`, its operands as inputs and its results as outputs.
Graph single_op_graph(const Graph& g, const Op& op) {
  Graph s;
  s.level = Level::kernel;
  s.name = g.name;
  std::map<ValueId, ValueId> remap;
  Op copy = op;
  for (ValueId& v : copy.inputs) {
    auto it = remap.find(v);
    if (it == remap.end()) {
      auto id = static_cast<ValueId>(s.values.size());
      s.values.push_back(g.value(v));
      s.inputs.push_back(id);
      it = remap.emplace(v, id).first;
    }
    v = it->second;
  }
  for (ValueId& v : copy.outputs) {
    auto id = static_cast<ValueId>(s.values.size());
    s.values.push_back(g.value(v));
    s.outputs.push_back(id);
    v = id;
  }
  s.ops.push_back(std::move(copy));
  return s;
}

}  // namespace

template <class V>
Tensor<V> field_random_input(const Shape& shape, uint64_t test_seed, uint64_t index, int threads) {
  Tensor<V> t;
  t.shape = shape;
  t.data.resize(static_cast<size_t>(numel(shape)));
  const uint64_t stream = ff::mix64(test_seed, 0x696e707574ULL, index);
  auto fill = [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      uint64_t h = ff::mix64(stream, static_cast<uint64_t>(i));
      t.data[i].p = ff::field_p().from_bits(h);
      if constexpr (std::is_same_v<V, FieldPQ>) t.data[i].q = ff::field_q().from_bits(ff::mix64(h));
    }
  };
  const auto n = static_cast<int64_t>(t.data.size());
  if (threads == 1 || n < (int64_t{1} << 16)) {
    fill(0, n);
  } else {
    const int64_t grain = int64_t{1} << 14;
    parallel_for_index((n + grain - 1) / grain, threads,
                       [&](int64_t c) { fill(c * grain, std::min(n, (c + 1) * grain)); });
  }
  return t;
}

template <class V>
std::vector<Tensor<V>> field_fingerprints(const Graph& g0, const FieldDomain<V>& domain,
                                          FingerprintCache* cache, bool keep_outputs) {
  WEFT_CHECK(g0.level == Level::kernel, "fingerprints of a {} graph", level_name(g0.level));
  const Graph g = expand_composites(g0);
  const uint64_t seed = domain.params().seed;
  const std::vector<uint64_t> hashes = value_hashes(g);
  std::vector<std::shared_ptr<const Tensor<V>>> env(g.values.size());
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    ValueId v = g.inputs[i];
    if (cache) env[v] = cache->find<V>(seed, hashes[v]);
    if (!env[v]) {
      env[v] = std::make_shared<const Tensor<V>>(
          field_random_input<V>(g.type(v).shape, seed, i, domain.params().threads));
      if (cache) cache->insert<V>(seed, hashes[v], env[v], /*keep=*/true);
    }
  }
  std::vector<bool> is_output(g.values.size(), false);
  if (keep_outputs)
    for (ValueId v : g.outputs) is_output[v] = true;
  // Demand-driven, from the outputs back: an op whose results are all cached is not evaluated and
  // its operands are not needed for it (the kept outputs of a target make its intermediates
  // unnecessary, whether or not the cache still holds them).
  std::vector<bool> needed(g.values.size(), false), evaluate(g.ops.size(), false);
  for (ValueId v : g.outputs) needed[v] = true;
  for (size_t i = g.ops.size(); i-- > 0;) {
    const Op& op = g.ops[i];
    bool wanted = false, all_cached = cache != nullptr;
    for (ValueId v : op.outputs) wanted = wanted || needed[v];
    if (!wanted) continue;
    for (ValueId v : op.outputs) {
      if (cache) env[v] = cache->find<V>(seed, hashes[v]);
      all_cached = all_cached && env[v];
    }
    if (all_cached) continue;
    evaluate[i] = true;
    for (ValueId v : op.inputs) needed[v] = true;
  }
  for (size_t i = 0; i < g.ops.size(); ++i) {
    if (!evaluate[i]) continue;
    domain.check_give_up();
    const Op& op = g.ops[i];
    const Graph single = single_op_graph(g, op);
    std::vector<const Tensor<V>*> in;
    std::map<ValueId, bool> seen;
    for (ValueId v : op.inputs)
      if (!seen[v]) {
        seen[v] = true;
        in.push_back(env[v].get());
      }
    std::vector<Tensor<V>> out =
        interp_detail::Evaluator<FieldDomain<V>>(domain).run_dataflow(single, in);
    for (size_t r = 0; r < out.size(); ++r) {
      ValueId v = op.outputs[r];
      env[v] = std::make_shared<const Tensor<V>>(std::move(out[r]));
      if (cache) cache->insert<V>(seed, hashes[v], env[v], is_output[v]);
    }
  }
  std::vector<Tensor<V>> result;
  for (ValueId v : g.outputs) result.push_back(*env[v]);
  return result;
}

bool uses_exp(const Graph& g) {
  for (const Op& op : g.ops) {
    const OpInfo& info = op_info(op.kind);
    if (info.formula.uses_exp()) return true;
    if (info.symbolic == Symbolic::expansion && uses_exp(composite_expansion(g, op))) return true;
    if (op.body && uses_exp(*op.body)) return true;
  }
  return false;
}

template Tensor<FieldP> field_random_input<FieldP>(const Shape&, uint64_t, uint64_t, int);
template Tensor<FieldPQ> field_random_input<FieldPQ>(const Shape&, uint64_t, uint64_t, int);
template std::vector<Tensor<FieldP>> field_fingerprints<FieldP>(const Graph&,
                                                                const FieldDomain<FieldP>&,
                                                                FingerprintCache*, bool);
template std::vector<Tensor<FieldPQ>> field_fingerprints<FieldPQ>(const Graph&,
                                                                  const FieldDomain<FieldPQ>&,
                                                                  FingerprintCache*, bool);

}  // namespace weft
