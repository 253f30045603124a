// The symbolic variables declared together (one module's `sym` lines): one variable per name,
// so every expression parsed against the scope agrees on each variable's bounds.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"
#include "sym/expr.h"

namespace weft {

class SymScope {
 public:
  // Declares `name` with bounds lo <= name <= hi (no hi: unbounded above). Throws UserError at
  // `loc` when the name is already declared, is not an identifier or a keyword, or the bounds
  // are empty or too large.
  const SymVar& declare(const std::string& name, int64_t lo = 0,
                        std::optional<int64_t> hi = std::nullopt, const SourceLoc& loc = {});
  // The variable named `name`, or null.
  const SymVar* find(std::string_view name) const;
  // Every declared variable, in name order.
  const std::map<std::string, SymVar, std::less<>>& vars() const { return vars_; }

 private:
  std::map<std::string, SymVar, std::less<>> vars_;
};

}  // namespace weft
