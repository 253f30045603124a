// Parser of the text form of symbolic expressions (SymExpr::str() prints it):
//   2 * n + floordiv(s, 4) - min(a, b, 3) + mod(t, 8) * max(x, y)
// Integers, declared variables, + - *, unary -, parentheses, floordiv/mod (two arguments) and
// min/max (two or more). The result is normalized, so parse(print(e)) == e.
#pragma once

#include <string_view>

#include "core/error.h"
#include "sym/expr.h"
#include "sym/scope.h"

namespace weft {

// Parses `text` against the variables of `scope`. Every mistake (unknown variable, bad token,
// literal out of range, non-positive constant divisor, overflow, nesting deeper than 256) is a
// UserError located at the offending token. `origin` is where the text starts in its file: its
// file name is used, and its line/col (when known) offset the reported positions; by default
// positions are within `text`, starting at 1:1.
SymExpr parse_sym_expr(std::string_view text, const SymScope& scope, const SourceLoc& origin = {});

}  // namespace weft
