// Bounds of symbolic expressions from their variables' bounds: the natural interval extension of
// the normal form, refined by monotonicity. The memory planner's upper bounds come from here.
#pragma once

#include <cstdint>
#include <optional>

#include "sym/expr.h"
#include "sym/range.h"

namespace weft {

// Each term's range from its atoms' ranges (cached in the atoms). Contains e's value at every
// binding within the variables' bounds at which e is defined. Cost: linear in e's size.
SymRange natural_range(const SymExpr& e);

// natural_range, tightened where e is monotone in a variable: when e(v + 1) - e(v) is provably
// >= 0 (or <= 0), e's extremes lie at v's bounds, so v is fixed there and the rest is bounded
// again (n * m - n with n, m >= 1 gets the lower bound 0, not 1 - hi(n)). Still sound.
SymRange bounds(const SymExpr& e);

// The least upper / greatest lower bound `bounds` finds; nullopt when unbounded (or beyond int64).
std::optional<int64_t> upper_bound(const SymExpr& e);
std::optional<int64_t> lower_bound(const SymExpr& e);

}  // namespace weft
