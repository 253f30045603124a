// The types ("annotations") of model-level values: tensors with a symbolic shape or only a rank,
// shapes, tuples and integers. Dims are SymExprs, so equal types are structurally equal.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "sym/expr.h"

namespace weft {

enum class MTypeKind : uint8_t { tensor, shape, tuple, integer };

struct MType {
  MTypeKind kind = MTypeKind::tensor;
  DType dtype = DType::f32;                  // tensor
  std::optional<std::vector<SymExpr>> dims;  // tensor: its dims; shape: its values
  int rank = 0;                              // tensor/shape: the number of dims (always known)
  std::vector<MType> fields;                 // tuple
  std::optional<SymExpr> value;              // integer: its value when known

  static MType tensor(DType dtype, std::vector<SymExpr> dims);
  static MType tensor_of_rank(DType dtype, int rank);
  static MType shape(std::vector<SymExpr> dims);
  static MType tuple(std::vector<MType> fields);
  static MType integer(std::optional<SymExpr> value = std::nullopt);

  bool is_tensor() const { return kind == MTypeKind::tensor; }
  // Whether the value is tensors only (a tensor, or a tuple of them, nested) and `holds` each
  // one's dtype: false for integers and shapes.
  bool every_tensor(bool (*holds)(DType)) const;
  // "f16[b, n, 64]", "f32[ndim=3]", "shape[b, n]", "tuple(f32[n], int)", "int(n)".
  std::string str() const;

  friend bool operator==(const MType&, const MType&) = default;
};

// Largest rank a model tensor may have (as in .weft).
inline constexpr int kMaxModelRank = 64;

}  // namespace weft
