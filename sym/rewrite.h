// Whole-expression rewrites of symbolic expressions: substituting variables, expanding mod,
// listing variables and divisors. Each result is renormalized.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "sym/expr.h"

namespace weft {

using SymSubstitution = std::map<std::string, SymExpr, std::less<>>;

// Rebuilds `e` bottom-up: each variable becomes on_var(variable), each application is rebuilt
// from its rebuilt arguments by its normalizing constructor. Shared atoms are rebuilt once.
SymExpr map_variables(const SymExpr& e, const std::function<SymExpr(const SymVar&)>& on_var);
// e with the named variables replaced (others kept). A replacement must stay within the
// variable's bounds, which e's normal form may rely on (min(n, 4096) is n when n <= 2048): a
// constant outside them is a UserError; for an expression the caller guarantees it (a call
// checks its arguments against the callee's bounds). Throws UserError too when a replacement
// makes a constant divisor non-positive or the arithmetic overflows.
SymExpr substitute(const SymExpr& e, const SymSubstitution& values);
// e with every mod(a, b) written as a - b * floordiv(a, b): one normal form for expressions that
// mix floordiv and mod of the same arguments (4 * floordiv(n, 4) + mod(n, 4) becomes n).
SymExpr expand_mod(const SymExpr& e);
// The variables of e, its applications' arguments included, ordered by name.
std::vector<SymVar> sym_variables(const SymExpr& e);
// The divisors of every floordiv and mod in e (nested ones included), ordered, each once.
std::vector<SymExpr> sym_divisors(const SymExpr& e);
// True when every divisor in e is positive at every binding within the variables' bounds, so
// that e is defined everywhere.
bool sym_always_defined(const SymExpr& e);

}  // namespace weft
