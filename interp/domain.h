// The value-domain interface of the reference interpreter: the interpreter fixes the µGraph
// semantics (shapes, slicing, loops, accumulation order) and a domain fixes what the scalars are
// (floating point for running programs, finite fields for the equivalence verifier).
#pragma once

#include <chrono>
#include <concepts>
#include <cstdint>
#include <span>

#include "core/rational.h"
#include "ir/attrs.h"
#include "ir/ops.h"

namespace weft {

// Thrown by a domain whose give-up time has passed, between tensor operations: the evaluation
// is abandoned (a caller's time budget), not failed.
struct EvaluationAbandoned {};

// When a domain gives up: checked at the operations that take the time (matmuls), so a budget
// can cut an evaluation in the middle. The default never gives up.
struct GiveUpAt {
  std::chrono::steady_clock::time_point at = std::chrono::steady_clock::time_point::max();
  void check() const {
    if (std::chrono::steady_clock::now() >= at) throw EvaluationAbandoned{};
  }
};

// A domain is a cheap-to-copy object with const member functions:
//   using Value = ...;                                 scalar type (regular, default-constructible)
//   Value constant(const Rational&) const;             exact constants (1/n of a mean, zero)
//   Value add/mul(Value, Value) const;                 the arithmetic reductions are built from
//   F elementwise(OpKind, const Attrs&) const;        an elementwise operator of the op table,
//                                                      resolved once per op application: f(a, b)
//                                                      is its value (b is Value{} for a unary
//                                                      operator), e.g. by its real semantics or
//                                                      its Lax formula. It may throw a
//                                                      domain-specific exception (e.g. a zero
//                                                      divisor in a finite field); it propagates
//                                                      out of evaluate() unchanged
//   Value reduce_max(std::span<const Value>) const;    max of one whole group at once (a finite
//                                                      field treats max as an uninterpreted
//                                                      symmetric function of the group)
// The interpreter builds every other operator from these: sum = left fold of add starting from the
// first element (no zero constant), mean = sum * constant(1/n), matmul = sums of products, and
// accum_max collects each element's per-iteration values and calls reduce_max once at the end.
template <class D>
concept ValueDomain = requires(const D& d, typename D::Value a, typename D::Value b,
                               const Rational& r, OpKind kind, const Attrs& attrs,
                               std::span<const typename D::Value> group) {
  requires std::regular<typename D::Value>;
  { d.constant(r) } -> std::same_as<typename D::Value>;
  { d.add(a, b) } -> std::same_as<typename D::Value>;
  { d.mul(a, b) } -> std::same_as<typename D::Value>;
  { d.elementwise(kind, attrs)(a, b) } -> std::same_as<typename D::Value>;
  { d.reduce_max(group) } -> std::same_as<typename D::Value>;
};

// Optional fast path: C = A·B for row-major contiguous A [m, k], B [k, n], C [m, n] (C is fully
// overwritten). Without it the interpreter uses a plain triple loop through add and mul.
template <class D>
concept HasMatmul = ValueDomain<D> &&
    requires(const D& d, const typename D::Value* A, const typename D::Value* B,
             typename D::Value* C, int64_t m, int64_t k, int64_t n) {
  d.matmul(A, B, C, m, k, n);
};

}  // namespace weft
