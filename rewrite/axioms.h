// The axioms of the rewrite operators (TASO's Table 2 kind): equalities between small graphs,
// written as rules (the rule text of docs/rewrites.md) and grouped by the operator they are
// about. They are what Z3 proves generated rules from (rewrite/prove.h); a test validates each
// one by the interpreter and by finite-field testing.
#pragma once

#include <vector>

#include "ir/ops.h"
#include "rewrite/rule.h"

namespace weft {

struct OperatorAxioms {
  OpKind kind;
  const char* rules;  // rule text; dims shared between inputs are the axiom's shape conditions
};

// One entry per rewrite row (ir/ops.cpp `.rewrite`), in kind order.
const std::vector<OperatorAxioms>& operator_axioms();

// Every axiom parsed (provenance "axiom:KIND"), ids in order.
const std::vector<Rule>& axioms();

}  // namespace weft
