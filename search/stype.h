// Compact tensor types and type rules for the search's inner loop (no allocation), mirroring the
// operator table's shape inference (ir/ops.cpp); every emitted graph is re-inferred by the builder,
// so a disagreement is caught as an internal error.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "core/error.h"
#include "ir/ops.h"

namespace weft {

inline constexpr int kMaxRank = 4;

struct SType {
  DType dtype = DType::f32;
  int8_t rank = 0;
  std::array<int64_t, kMaxRank> d = {1, 1, 1, 1};
  friend bool operator==(const SType&, const SType&) = default;
};

inline SType to_stype(const TensorType& t) {
  WEFT_CHECK(t.shape.size() <= kMaxRank, "rank {} in the search", t.shape.size());
  SType s;
  s.dtype = t.dtype;
  s.rank = static_cast<int8_t>(t.shape.size());
  for (size_t i = 0; i < t.shape.size(); ++i) s.d[i] = t.shape[i];
  return s;
}

inline TensorType to_tensor_type(const SType& s) {
  return TensorType{s.dtype, Shape(s.d.begin(), s.d.begin() + s.rank)};
}

inline bool infer_binary(const SType& a, const SType& b, SType& out) {
  if (a.dtype != b.dtype || a.rank != b.rank) return false;
  out = a;
  for (int i = 0; i < a.rank; ++i) {
    if (a.d[i] != b.d[i] && a.d[i] != 1 && b.d[i] != 1) return false;
    out.d[i] = std::max(a.d[i], b.d[i]);
  }
  return true;
}

inline bool infer_matmul(const SType& a, const SType& b, SType& out) {
  if (a.dtype != b.dtype || a.rank != b.rank || a.rank < 2 || a.rank > kMaxRank) return false;
  int r = a.rank;
  if (a.d[r - 1] != b.d[r - 2]) return false;
  out = a;
  for (int i = 0; i + 2 < r; ++i) {
    if (a.d[i] != b.d[i] && a.d[i] != 1 && b.d[i] != 1) return false;
    out.d[i] = std::max(a.d[i], b.d[i]);
  }
  out.d[r - 2] = a.d[r - 2];
  out.d[r - 1] = b.d[r - 1];
  return true;
}


// Result type of a search operator and the element count `k` its abstract term needs. `b` is
// ignored for unary ops; `dim` is the reduced (or concatenated) dim; `loop` the for-loop range.
inline bool infer_search_op(OpKind kind, const SType& a, const SType* b, int dim, int64_t loop,
                            SType& out, int64_t& k) {
  k = 0;
  switch (op_info(kind).op_class) {
    case OpClass::unary:
      out = a;
      return true;
    case OpClass::binary:
      return infer_binary(a, *b, out);
    case OpClass::matmul:
      if (a.rank < 2 || a.rank > kMaxRank || !infer_matmul(a, *b, out)) return false;
      k = a.d[static_cast<size_t>(a.rank - 1)];
      return true;
    case OpClass::reduction:
      if (dim < 0 || dim >= a.rank) return false;
      out = a;
      k = a.d[dim];
      out.d[dim] = 1;
      return true;
    case OpClass::structure:  // accumulators
      out = a;
      k = loop;
      if (kind == OpKind::accum_concat) out.d[dim] *= loop;
      return true;
    default:
      return false;
  }
}

}  // namespace weft
