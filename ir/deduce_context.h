// What a symbolic shape rule checks its call against: the prover, where the call is, and where
// the conditions it can neither prove nor refute go (they become run-time checks of the binding).
// Every model-level shape rule reports through it: the table's (ir/shape_rules.h) and the model
// layer's own (model/model_ops.h).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "sym/prove.h"

namespace weft {

// A shape rule's requirement that the prover refuted over the variables' bounds: a UserError that
// also carries the requirement (what it expects, the condition, a binding that breaks it), so a
// caller that chose the bounds itself can narrow them to what the model allows.
class RefutedRequirement : public UserError {
 public:
  RefutedRequirement(SourceLoc loc, std::string message, std::string expects,
                     SymCondition condition, SymBinding counterexample)
      : UserError(std::move(loc), std::move(message)),
        expects_(std::move(expects)),
        condition_(std::move(condition)),
        counterexample_(std::move(counterexample)) {}
  const std::string& expects() const { return expects_; }
  const SymCondition& condition() const { return condition_; }
  const SymBinding& counterexample() const { return counterexample_; }

 private:
  std::string expects_;
  SymCondition condition_;
  SymBinding counterexample_;
};

class DeduceContext {
 public:
  DeduceContext(SymProver& prover, SourceLoc loc, std::vector<SymCondition>* runtime_checks)
      : prover_(prover), loc_(std::move(loc)), checks_(runtime_checks) {}

  // a == b for the call to be valid: proven: nothing; refuted: a UserError naming `what` and a
  // binding where they differ; unknown: a run-time check.
  void require_eq(const SymExpr& a, const SymExpr& b, const std::string& what);
  // a <= b, likewise.
  void require_le(const SymExpr& a, const SymExpr& b, const std::string& what);
  // True only when a == b is proven (no check recorded).
  bool provably_eq(const SymExpr& a, const SymExpr& b);
  [[noreturn]] void fail(const std::string& message) const;
  const SourceLoc& loc() const { return loc_; }
  SymProver& prover() { return prover_; }

 private:
  void require(SymRel rel, const SymExpr& a, const SymExpr& b, const std::string& what);
  SymProver& prover_;
  SourceLoc loc_;
  std::vector<SymCondition>* checks_;
};

// A dim attribute (possibly negative) normalized against `rank`; throws at the call otherwise.
int64_t normalize_dim(DeduceContext& ctx, const SymExpr& dim, int rank, const char* name);
// Dim i of a broadcast of two operands: equal dims, or one of them the constant 1 (otherwise
// their equality is required).
SymExpr broadcast_dim(DeduceContext& ctx, const SymExpr& a, const SymExpr& b, size_t i);

}  // namespace weft
