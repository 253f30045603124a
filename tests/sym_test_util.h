// Helpers shared by the symbolic-arithmetic tests: one scope of variables with varied bounds.
#pragma once

#include <string>

#include "sym/parse.h"
#include "sym/scope.h"

namespace weft::test {

// n in [1, 2048], m in [1, 64], b in [2, 8], s >= 0, t >= 0, u >= 1, x in [-8, 8].
const SymScope& sym_scope();
// Parses `text` against sym_scope(); a parse error fails the calling test.
SymExpr sx(const std::string& text);

}  // namespace weft::test
