// Model attributes and tensor types evaluated at a binding of the symbolic variables.
#include "model/evaluate_at.h"

#include <fmt/format.h>

#include <vector>

namespace weft {

Attrs evaluate_attrs(const MAttrs& attrs, const SymBinding& heap, const SourceLoc& loc) {
  Attrs out;
  auto eval = [&](const SymExpr& e) {
    SymEvalResult r = try_evaluate(e, heap);
    if (!r.value) throw UserError(loc, fmt::format("cannot evaluate {}: {}", e.str(), r.error));
    return *r.value;
  };
  for (const auto& [name, value] : attrs) {
    if (auto* e = std::get_if<SymExpr>(&value))
      out.set(name, eval(*e));
    else if (auto* r = std::get_if<Rational>(&value))
      out.set(name, *r);
    else {
      std::vector<int64_t> list;
      for (const SymExpr& x : std::get<std::vector<SymExpr>>(value)) list.push_back(eval(x));
      out.set(name, list);
    }
  }
  return out;
}

std::optional<TensorType> tensor_type_at(const MType& type, const SymBinding& heap) {
  if (!type.is_tensor() || !type.dims) return std::nullopt;
  Shape shape;
  for (const SymExpr& d : *type.dims) {
    auto c = d.as_constant();
    if (!c) {
      SymEvalResult r = try_evaluate(d, heap);
      if (!r.value) return std::nullopt;
      c = r.value;
    }
    shape.push_back(*c);
  }
  return TensorType{type.dtype, shape};
}

}  // namespace weft
