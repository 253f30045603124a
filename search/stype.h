// Compact tensor types and type rules for the search's inner loop (no allocation), mirroring the
// operator table's shape inference (ir/ops.cpp); every emitted graph is re-inferred by the builder,
// so a disagreement is caught as an internal error.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "core/error.h"
#include "ir/ops.h"
#include "search/dim_classes.h"

namespace weft {

inline constexpr int kMaxRank = 4;

struct SType {
  DType dtype = DType::f32;
  int8_t rank = 0;
  std::array<int64_t, kMaxRank> d = {1, 1, 1, 1};
  DimClassList cls = {kAnyClass, kAnyClass, kAnyClass, kAnyClass};  // not part of the type
  // Dims holding per-block partial results of a reduced axis, laid side by side by a save's omap:
  // part[d] is one block's tile size along d (0: not such a dim) and part_cls[d] the tile's axis.
  // Only `sum(x, dim=d, to=part[d])` may reduce such a dim (not part of the type either).
  std::array<int64_t, kMaxRank> part = {0, 0, 0, 0};
  DimClassList part_cls = {kAnyClass, kAnyClass, kAnyClass, kAnyClass};
  friend bool operator==(const SType& a, const SType& b) {
    return a.dtype == b.dtype && a.rank == b.rank && a.d == b.d;
  }
};

// Class of an elementwise result dim, or false when the operands' axes differ.
inline bool join_class(int8_t ca, int64_t sa, int8_t cb, int64_t sb, int8_t& out) {
  if (sa == 1 || sb == 1) {
    out = sa == 1 ? (sb == 1 ? kUnit : cb) : ca;
    return true;
  }
  if (ca == kAnyClass || cb == kAnyClass) {
    out = ca == kAnyClass ? cb : ca;
    return true;
  }
  out = ca;
  return ca == cb;
}

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
  if (a.dtype != b.dtype || a.rank != b.rank || a.rank > kMaxRank) return false;
  out = a;
  for (int i = 0; i < a.rank; ++i) {
    if (a.d[i] != b.d[i] && a.d[i] != 1 && b.d[i] != 1) return false;
    out.d[i] = std::max(a.d[i], b.d[i]);
    if (!join_class(a.cls[i], a.d[i], b.cls[i], b.d[i], out.cls[i])) return false;
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
    if (!join_class(a.cls[i], a.d[i], b.cls[i], b.d[i], out.cls[i])) return false;
  }
  out.d[r - 2] = a.d[r - 2];
  out.d[r - 1] = b.d[r - 1];
  out.cls[r - 2] = a.cls[r - 2];
  out.cls[r - 1] = b.cls[r - 1];
  return true;
}

// Canonical-form rules that lose no computation (docs/search.md), from the op table's algebra:
// - op(a, a) is skipped where it is another operator or a constant (mul: sqr; sub: 0; div: 1);
// - a scale feeding an operand in which the operator is homogeneous (mul, matmul, sum, mean,
//   accumulators, the numerator of div, scale itself) gives the same value as scaling the
//   result, so only the latter form is generated; likewise a scale of a scale folds into one.
template <class ProducerKind>
bool canonical(OpKind kind, int a, int b, ProducerKind&& producer) {
  const OpInfo& info = op_info(kind);
  if (a == b && info.same_operands_redundant) return false;
  auto scaled = [&](int v) { return v >= 0 && producer(v) == OpKind::scale; };
  return !((info.homogeneous & 1) && scaled(a)) && !((info.homogeneous & 2) && scaled(b));
}

inline bool infer_search_op_plain(OpKind kind, const SType& a, const SType* b, int dim,
                                  int64_t loop, const DimClasses& dc, SType& out, int64_t& k);

// Result type of a search operator and the element count `k` its abstract term needs. `b` is
// ignored for unary ops; `dim` is the reduced (or concatenated) dim; `loop` the for-loop range;
// `to` the size a reduction reduces to (1, or a partial-result dim's tile size). False when the
// operands do not fit, or the operator reduces or mixes axes in a way the program never does (see
// dim_classes.h).
inline bool infer_search_op(OpKind kind, const SType& a, const SType* b, int dim, int64_t loop,
                            const DimClasses& dc, SType& out, int64_t& k, int64_t to = 1) {
  k = 0;
  if (op_info(kind).op_class != OpClass::reduction) {
    // Partial results stay partial only up to the reduction that combines them.
    if (!infer_search_op_plain(kind, a, b, dim, loop, dc, out, k)) return false;
    out.part = {0, 0, 0, 0};
    out.part_cls = {kAnyClass, kAnyClass, kAnyClass, kAnyClass};
    return true;
  }
  if (dim < 0 || dim >= a.rank) return false;
  out = a;
  out.part[dim] = 0;
  out.part_cls[dim] = kAnyClass;
  if (to == 1) {
    if (a.part[dim] > 0 || !dc.is_reduced(a.cls[dim])) return false;
    k = a.d[dim];
    out.d[dim] = 1;
    out.cls[dim] = kUnit;
    return true;
  }
  // Combining the blocks' partial results: only over a dim that holds them, to one tile.
  if (kind != OpKind::sum || a.part[dim] != to || a.d[dim] % to != 0) return false;
  k = a.d[dim] / to;
  out.d[dim] = to;
  out.cls[dim] = a.part_cls[dim];
  return true;
}

// infer_search_op for operators other than reductions (partial-result dims of the result are
// cleared by the caller).
inline bool infer_search_op_plain(OpKind kind, const SType& a, const SType* b, int dim,
                                  int64_t loop, const DimClasses& dc, SType& out, int64_t& k) {
  k = 0;
  switch (op_info(kind).op_class) {
    case OpClass::unary:
      out = a;
      return true;
    case OpClass::binary:
      return infer_binary(a, *b, out);
    case OpClass::matmul: {
      if (a.rank < 2 || a.rank > kMaxRank || !infer_matmul(a, *b, out)) return false;
      size_t r = static_cast<size_t>(a.rank);
      k = a.d[r - 1];
      int8_t ca = a.cls[r - 1], cb = b->cls[r - 2];
      if (ca != kAnyClass && cb != kAnyClass && ca != cb) return false;
      return dc.is_reduced(ca == kAnyClass ? cb : ca);
    }
    case OpClass::structure:  // accumulators
      out = a;
      k = loop;
      if (kind == OpKind::accum_concat) out.d[dim] *= loop;
      return true;
    case OpClass::reduction:  // infer_search_op's
    case OpClass::movement:
    case OpClass::composite:
    case OpClass::hierarchy:
    case OpClass::model:
      return false;
  }
  return false;
}

}  // namespace weft
