// The floating-point value domain (f32 or f64): how programs are run and compared numerically.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>

#include "core/error.h"
#include "interp/domain.h"

namespace weft {

// Scalars are T; every operation rounds to T once, so RealDomain<float> follows f32 arithmetic
// (add/sub/mul/div of floats computed in double and rounded are exactly the f32 operations).
// Elementwise operators take the op table's real semantics, evaluated in double and rounded to T
// (for add, sub, mul and div of floats that gives exactly the f32 operation, as above).
template <class T>
struct RealDomain {
  using Value = T;
  GiveUpAt give_up;  // checked at each matmul

  Value constant(const Rational& r) const { return static_cast<T>(r.to_double()); }
  Value add(Value a, Value b) const { return a + b; }
  Value mul(Value a, Value b) const { return a * b; }
  auto elementwise(OpKind kind, const Attrs& attrs) const {
    const OpInfo& info = op_info(kind);
    RealFn fn = info.real;
    WEFT_CHECK(fn != nullptr, "'{}' has no real semantics", info.name);
    const ScalarConstants c = scalar_constants(info, attrs);
    return [fn, c](Value a, Value b) {
      return static_cast<T>(fn({static_cast<double>(a), static_cast<double>(b), 0, c.k, c.k2}));
    };
  }
  Value reduce_max(std::span<const Value> group) const {
    WEFT_CHECK(!group.empty(), "max of an empty group");
    return *std::max_element(group.begin(), group.end());
  }

  // Blocked so that a panel of B stays in cache while every row of A streams over it; the fixed
  // 8-wide inner loop lets the compiler vectorize at -O2. Each C element still accumulates its k
  // products in increasing order, so results do not depend on the blocking.
  void matmul(const Value* A, const Value* B, Value* C, int64_t m, int64_t k, int64_t n) const {
    give_up.check();
    constexpr int64_t kNB = 512, kKB = 128, kW = 8;
    std::fill(C, C + m * n, T(0));
    for (int64_t j0 = 0; j0 < n; j0 += kNB) {
      int64_t jn = std::min(kNB, n - j0);
      for (int64_t k0 = 0; k0 < k; k0 += kKB) {
        int64_t k1 = std::min(k, k0 + kKB);
        for (int64_t i = 0; i < m; ++i) {
          T* __restrict c = C + i * n + j0;
          for (int64_t kk = k0; kk < k1; ++kk) {
            const T a = A[i * k + kk];
            const T* __restrict b = B + kk * n + j0;
            int64_t j = 0;
            for (; j + kW <= jn; j += kW)
              for (int64_t u = 0; u < kW; ++u) c[j + u] += a * b[j + u];
            for (; j < jn; ++j) c[j] += a * b[j];
          }
        }
      }
    }
  }
};

static_assert(HasMatmul<RealDomain<float>> && HasMatmul<RealDomain<double>>);

}  // namespace weft
