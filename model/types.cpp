// Text form of model-level types.
#include "model/types.h"

#include <fmt/format.h>

#include <algorithm>

#include "ir/dim_algebra.h"

namespace weft {

MType MType::tensor(DType dtype, std::vector<SymExpr> dims) {
  MType t;
  t.kind = MTypeKind::tensor;
  t.dtype = dtype;
  t.rank = static_cast<int>(dims.size());
  t.dims = std::move(dims);
  return t;
}

bool MType::every_tensor(bool (*holds)(DType)) const {
  if (is_tensor()) return holds(dtype);
  return kind == MTypeKind::tuple && std::all_of(fields.begin(), fields.end(), [&](const MType& f) {
           return f.every_tensor(holds);
         });
}

MType MType::tensor_of_rank(DType dtype, int rank) {
  MType t;
  t.kind = MTypeKind::tensor;
  t.dtype = dtype;
  t.rank = rank;
  return t;
}

MType MType::shape(std::vector<SymExpr> dims) {
  MType t;
  t.kind = MTypeKind::shape;
  t.rank = static_cast<int>(dims.size());
  t.dims = std::move(dims);
  return t;
}

MType MType::tuple(std::vector<MType> fields) {
  MType t;
  t.kind = MTypeKind::tuple;
  t.fields = std::move(fields);
  return t;
}

MType MType::integer(std::optional<SymExpr> value) {
  MType t;
  t.kind = MTypeKind::integer;
  t.value = std::move(value);
  return t;
}

namespace {
std::string dims_str(const MType& t) {
  return sym_dims_str(t.dims, t.rank);
}
}  // namespace

std::string MType::str() const {
  switch (kind) {
    case MTypeKind::tensor:
      return std::string(dtype_name(dtype)) + dims_str(*this);
    case MTypeKind::shape:
      return "shape" + dims_str(*this);
    case MTypeKind::tuple: {
      std::string s = "tuple(";
      for (size_t i = 0; i < fields.size(); ++i) s += (i ? ", " : "") + fields[i].str();
      return s + ")";
    }
    case MTypeKind::integer:
      return value ? "int(" + value->str() + ")" : "int";
  }
  return "?";
}

}  // namespace weft
