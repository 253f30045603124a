// Helpers shared by the model-layer tests.
#pragma once

#include <cstdint>
#include <vector>

#include "model/module.h"
#include "sym/evaluate.h"

namespace weft::test {

// Model attributes with every symbolic value evaluated at `b` (what the VM hands an operator).
inline Attrs evaluate_attrs_at(const MAttrs& attrs, const SymBinding& b) {
  Attrs out;
  for (const auto& [k, v] : attrs) {
    if (auto* e = std::get_if<SymExpr>(&v))
      out.set(k, evaluate(*e, b));
    else if (auto* r = std::get_if<Rational>(&v))
      out.set(k, *r);
    else {
      std::vector<int64_t> l;
      for (const SymExpr& e : std::get<std::vector<SymExpr>>(v)) l.push_back(evaluate(e, b));
      out.set(k, l);
    }
  }
  return out;
}

}  // namespace weft::test
