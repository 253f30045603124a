// Term construction for search operators (the notes' §2 table) and oracle queries.
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
  switch (kind) {
    case OpKind::exp:
      return store_.unary(TermOp::exp, a);
    case OpKind::sqrt:
      return store_.unary(TermOp::sqrt, a);
    case OpKind::silu:
      return store_.unary(TermOp::silu, a);
    case OpKind::gelu:
      return store_.unary(TermOp::gelu, a);
    case OpKind::relu:
      return store_.unary(TermOp::relu, a);
    case OpKind::sqr:
      return store_.mul(a, a);
    case OpKind::scale:
      return a;          // constants are abstracted away
    case OpKind::shift:  // a zero offset is the identity, as in absexpr/of_graph.cpp
      return constant == Rational(0) ? a : store_.add(a, store_.cst());
    case OpKind::add:
    case OpKind::sub:
      return store_.add(a, b);
    case OpKind::mul:
      return store_.mul(a, b);
    case OpKind::div:
      return store_.div(a, b);
    case OpKind::matmul:
      return store_.sum(k, store_.mul(a, b));
    case OpKind::sum:
    case OpKind::mean:
    case OpKind::accum_sum:
      return store_.sum(k, a);
    case OpKind::max:
    case OpKind::accum_max:
      return store_.max(k, a);
    case OpKind::accum_concat:
      return a;
    default:
      WEFT_CHECK(false, "'{}' has no search term rule", op_info(kind).name);
  }
  return a;
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
