// An operator call's attribute values in a model function, where sizes may be symbolic: the
// attributes a symbolic shape rule (ir/dim_algebra.h) reads and normalizes.
#pragma once

#include <map>
#include <string>
#include <variant>
#include <vector>

#include "core/rational.h"
#include "sym/expr.h"

namespace weft {

using MAttrValue = std::variant<SymExpr, Rational, std::vector<SymExpr>>;
using MAttrs = std::map<std::string, MAttrValue>;

}  // namespace weft
