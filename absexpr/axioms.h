// The axioms of abstract expressions as data: A_eq (equivalence) and A_sub (subexpression).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absexpr/term.h"

namespace weft {

// One named equation `lhs = rhs` over patterns (see absexpr/pattern.h). `both_ways` rules are
// applied left-to-right and right-to-left; the others are their own inverse (commutativity).
struct Axiom {
  std::string name;
  std::string lhs;
  std::string rhs;
  bool both_ways = true;
  std::string why;
};

// The fixed A_eq rules (notes §2, Mirage Table 2), plus the extensions weft needs for its own
// operators. sum(1, x) = x and max(1, x) = x are not listed: TermStore and the e-graph build them
// in (reducing one element is the identity).
const std::vector<Axiom>& eq_axioms();

// Reduction-factorization rules `(op k ?x) = (op i (op j ?x))` for `op` sum or max, every k in
// `sizes` and every i * j = k with i, j > 1. Together with the fixed rules they make
// sum(i, sum(j, x)) = sum(i*j, x) for every product that can occur in a term equivalent to the
// target (see reduction_sizes).
std::vector<Axiom> factorization_axioms(const std::set<int64_t>& sizes, TermOp op = TermOp::sum);

// The sizes the factorization rules for `op` (sum or max) need for `target`: every divisor of every
// product of `op` sizes along a downward path through add/mul/div/`op` nodes. Uninterpreted
// functions (exp, sqrt, the other reduction, ...) stop a path because no axiom moves a reduction
// across them; every A_eq rule keeps the product of the sizes reducing one monomial, so no other
// size can appear in a term equivalent to the target. Products beyond 2^40 are left out and
// `*truncated` (when given) is set: the rules are then incomplete.
std::set<int64_t> reduction_sizes(const TermStore& store, TermId target, TermOp op = TermOp::sum,
                                  bool* truncated = nullptr);

// eq_axioms() plus the factorization rules of both reductions for `target`.
std::vector<Axiom> axioms_for(const TermStore& store, TermId target, bool* truncated = nullptr);

// A_sub, which the oracle implements as reachability in the saturated e-graph rather than as
// rewrite rules: listed here for the documentation and `weft absexpr --axioms`.
struct SubAxiom {
  std::string name;
  std::string rule;
  std::string why;
};
const std::vector<SubAxiom>& sub_axioms();

}  // namespace weft
