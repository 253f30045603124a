// Proving a rule from the operator axioms with Z3 (TASO §4): operators are uninterpreted
// functions over a tensor sort, the axioms universally quantified equalities, guarded by the
// dims their inputs share; tensor dims enter only as an uninterpreted `dim(i, t)` with each
// operator's shape rule for rank-2 values. A rule is proven when its negation is unsatisfiable.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rewrite/rule.h"

namespace weft {

struct ProveOptions {
  // Z3's deterministic resource limit per rule: the same verdict on every machine. Proofs of the
  // depth-3 rules need a small fraction of it; a rule the axioms do not reach spends all of it.
  uint64_t rlimit = 500'000;
};

enum class ProofVerdict {
  proven,
  not_proven,   // Z3 found the negation satisfiable, or gave up (resource limit)
  unsupported,  // the rule uses an operator or a rank the encoding does not model
};
const char* proof_verdict_name(ProofVerdict v);

struct ProofResult {
  ProofVerdict verdict = ProofVerdict::not_proven;
  std::string message;  // not proven / unsupported: why
};

// Proves `rule` from `axioms` (rewrite/axioms.h's, or a subset: a test proves each axiom is not
// derivable from the others' mutation).
ProofResult prove_rule(const Rule& rule, const std::vector<Rule>& axioms,
                       const ProveOptions& options = {});

}  // namespace weft
