// The search's oracle: terms of new tensors by absexpr/of_graph.h's abstract semantics, and the
// pruning queries.
#include "search/absexpr_oracle.h"

#include "absexpr/of_graph.h"
#include "core/error.h"
#include "search/memory_account.h"

namespace weft {

AbsExprOracle::AbsExprOracle(const Graph& program, const SaturationLimits& limits) {
  for (ValueId v : program.inputs) inputs_.push_back(store_.var(program.value(v).name));
  outputs_ = abstract_outputs(program, store_);
  for (TermId t : outputs_) oracles_.push_back(std::make_unique<Oracle>(store_, t, limits));
}

TermRef AbsExprOracle::op_term(OpKind kind, TermRef a, TermRef b, int64_t k,
                               const Rational& constant) {
  return abstract_term(kind, a, b, k, constant, store_);
}

bool AbsExprOracle::viable(TermRef t) {
  for (const auto& o : oracles_)
    if (o->is_viable(t)) return true;
  return false;
}

bool AbsExprOracle::equivalent(TermRef t, int output) {
  return oracles_.at(static_cast<size_t>(output))->is_equivalent(t);
}

int64_t AbsExprOracle::memory_bytes() const {
  // Per term: its node in the store's chunks, its hash-index entry (node with the cached hash,
  // plus a bucket pointer) and one cached answer per output's oracle.
  constexpr int64_t per_term =
      sizeof(TermNode) + heap_chunk(16 + sizeof(std::pair<const TermNode, TermId>)) + 8;
  int64_t per_oracle = 4 * static_cast<int64_t>(oracles_.size());
  return static_cast<int64_t>(store_.size()) * (per_term + per_oracle);
}

bool AbsExprOracle::complete() const {
  for (const auto& o : oracles_)
    if (!o->complete()) return false;
  return true;
}

}  // namespace weft
