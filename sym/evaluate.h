// Evaluation of symbolic expressions under a binding of their variables, with every failure a
// clear error: a missing or out-of-bounds variable, int64 overflow, a non-positive divisor.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "sym/expr.h"

namespace weft {

// Variable name -> value.
using SymBinding = std::map<std::string, int64_t, std::less<>>;

// "m=3, n=64" (in name order).
std::string binding_str(const SymBinding& binding);

// The value of e, or nullopt with `error` saying why there is none.
struct SymEvalResult {
  std::optional<int64_t> value;
  std::string error;
};
SymEvalResult try_evaluate(const SymExpr& e, const SymBinding& binding);

// The value of e; throws UserError with try_evaluate's message when there is none.
int64_t evaluate(const SymExpr& e, const SymBinding& binding);

}  // namespace weft
