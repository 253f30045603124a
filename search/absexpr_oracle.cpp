// The search's oracle: terms of new tensors by absexpr/of_graph.h's abstract semantics, and the
// pruning queries.
#include "search/absexpr_oracle.h"

#include <atomic>
#include <memory>

#include "absexpr/of_graph.h"
#include "core/error.h"
#include "search/memory_account.h"

namespace weft {
namespace {

std::atomic<uint64_t> next_oracle_id{1};

// One remembered op_term call. The search asks for the same operator over the same operand terms
// again and again (sibling subtrees, every schedule), and the answer is fixed once made (terms are
// hash-consed), so a small per-thread memo answers most calls without the shared term index,
// whose lookup was the hottest function of the block search (docs/benchmarks.md).
struct OpTermMemoEntry {
  uint64_t owner = 0;  // AbsExprOracle::id_; 0: empty
  int64_t k = 0;
  Rational constant;
  TermRef a = 0, b = 0, term = 0;
  OpKind kind = OpKind::add;
};
constexpr size_t kOpTermMemoSize = size_t{1} << 12;

size_t op_term_slot(OpKind kind, TermRef a, TermRef b, int64_t k, const Rational& c) {
  uint64_t h = static_cast<uint64_t>(kind) * 0x9E3779B97F4A7C15ull;
  for (uint64_t x : {uint64_t{a}, uint64_t{b}, static_cast<uint64_t>(k),
                     static_cast<uint64_t>(c.num()), static_cast<uint64_t>(c.den())})
    h = (h ^ x) * 0xBF58476D1CE4E5B9ull;
  return static_cast<size_t>(h >> 52) & (kOpTermMemoSize - 1);
}

}  // namespace

AbsExprOracle::AbsExprOracle(const Graph& program, const SaturationLimits& limits)
    : id_(next_oracle_id.fetch_add(1)) {
  for (ValueId v : program.inputs) inputs_.push_back(store_.var(program.value(v).name));
  outputs_ = abstract_outputs(program, store_);
  for (TermId t : outputs_) oracles_.push_back(std::make_unique<Oracle>(store_, t, limits));
}

TermRef AbsExprOracle::op_term(OpKind kind, TermRef a, TermRef b, int64_t k,
                               const Rational& constant) {
  thread_local std::unique_ptr<OpTermMemoEntry[]> memo;
  if (!memo) memo = std::make_unique<OpTermMemoEntry[]>(kOpTermMemoSize);
  OpTermMemoEntry& e = memo[op_term_slot(kind, a, b, k, constant)];
  if (e.owner == id_ && e.kind == kind && e.a == a && e.b == b && e.k == k &&
      e.constant == constant)
    return e.term;
  const TermRef term = abstract_term(kind, a, b, k, constant, store_);
  e = OpTermMemoEntry{id_, k, constant, a, b, term, kind};
  return term;
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

bool AbsExprOracle::proven(const Graph& candidate) {
  std::vector<TermId> terms = abstract_outputs(candidate, store_);
  if (terms.size() != oracles_.size()) return false;
  for (size_t i = 0; i < terms.size(); ++i)
    if (!oracles_[i]->is_proven_equivalent(terms[i])) return false;
  return true;
}

bool AbsExprOracle::complete() const {
  for (const auto& o : oracles_)
    if (!o->complete()) return false;
  return true;
}

}  // namespace weft
