// Internal helpers of the normal form shared by its rule files (expr.cpp: the ring operations;
// division.cpp: floordiv/mod; minmax.cpp: min/max). Not for use outside sym/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sym/expr.h"

namespace weft::sym_detail {

// int64 arithmetic on coefficients; a result outside [-(2^63-1), 2^63-1] throws UserError naming
// `what` (the operation being normalized).
int64_t checked_add(int64_t a, int64_t b, const char* what);
int64_t checked_mul(int64_t a, int64_t b, const char* what);

// A variable only the prover makes (a remainder, say): its name starts with '%', which no parsed
// or user-declared name can, so it never clashes with the user's variables.
SymVar hidden_var(const std::string& name, int64_t lo, int64_t hi);

// Builds an application atom, computing its range and hash. The arguments must already be the
// normalized arguments the rule files decided on.
SymAtomRef make_atom(SymAtomKind kind, std::vector<SymExpr> args);

int compare_monomials(const std::vector<SymFactor>& a, const std::vector<SymFactor>& b);
// gcd of the term coefficients (not the constant); 0 when there are no terms.
int64_t terms_content(const SymExpr& e);
// e / k where k divides every coefficient and the constant.
SymExpr divide_exact(const SymExpr& e, int64_t k);
// e * k.
SymExpr scale(const SymExpr& e, int64_t k);
// When `divisor` is c * m for a monomial m (one term, no constant): the terms of `e` that are
// multiples of it, divided by it (quotient), and the other terms plus e's constant (rest).
// Returns false when the divisor is not a single term.
bool split_by_monomial(const SymExpr& e, const SymExpr& divisor, SymExpr& quotient, SymExpr& rest);

}  // namespace weft::sym_detail
