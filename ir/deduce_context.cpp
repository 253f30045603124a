// Checks of symbolic shape rules: proven, refuted as located errors, or run-time checks.
#include "ir/deduce_context.h"

#include <fmt/format.h>

#include "sym/evaluate.h"

namespace weft {

void DeduceContext::fail(const std::string& message) const {
  throw UserError(loc_, message);
}

void DeduceContext::require(SymRel rel, const SymExpr& a, const SymExpr& b,
                            const std::string& what) {
  SymCondition c{rel, a, b};
  SymObligation ob = prover_.require(c);
  switch (ob.proof.truth) {
    case SymTruth::proven_true:
      return;
    case SymTruth::proven_false:
      throw RefutedRequirement(loc_,
                               fmt::format("expected {}, but {} fails at {}", what, c.str(),
                                           binding_str(*ob.proof.counterexample)),
                               what, c, *ob.proof.counterexample);
    case SymTruth::unknown:
      if (checks_) checks_->push_back(*ob.runtime_check);
      return;
  }
}

void DeduceContext::require_eq(const SymExpr& a, const SymExpr& b, const std::string& what) {
  require(SymRel::eq, a, b, what);
}
void DeduceContext::require_le(const SymExpr& a, const SymExpr& b, const std::string& what) {
  require(SymRel::le, a, b, what);
}
bool DeduceContext::provably_eq(const SymExpr& a, const SymExpr& b) {
  return a == b || prover_.prove_eq(a, b).truth == SymTruth::proven_true;
}

int64_t normalize_dim(DeduceContext& ctx, const SymExpr& dim, int rank, const char* name) {
  auto d = dim.as_constant();
  if (!d) ctx.fail(fmt::format("{}={} must be an integer", name, dim.str()));
  if (*d < -rank || *d >= rank)
    ctx.fail(fmt::format("{}={} is out of range for a tensor of rank {} (valid: {}..{})", name, *d,
                         rank, -rank, rank - 1));
  return *d < 0 ? *d + rank : *d;
}

SymExpr broadcast_dim(DeduceContext& ctx, const SymExpr& a, const SymExpr& b, size_t i) {
  if (ctx.provably_eq(a, b)) return a;
  if (a.as_constant() == 1) return b;
  if (b.as_constant() == 1) return a;
  ctx.require_eq(a, b, fmt::format("dim {} of the operands to agree (or one to be 1)", i));
  return a;
}

}  // namespace weft
