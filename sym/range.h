// Integer intervals with infinite ends in saturating 128-bit arithmetic: the interval extension
// that sym/ uses to bound expressions (normal-form simplification, proofs, upper bounds).
#pragma once

#include <cstdint>
#include <optional>

namespace weft {

// [lo, hi] over the integers; either end may be infinite. Ends are exact while their magnitude
// fits in int64 and widen to infinity beyond, so every operation is sound (the true range is
// always inside) and never overflows: finite ends are below 2^63, their products below 2^126.
struct SymRange {
  using Int = __int128;
  static constexpr Int kInf = Int{1} << 100;

  Int lo = -kInf;
  Int hi = kInf;

  static SymRange point(Int v) { return of(v, v); }
  // Clamps each end (magnitudes beyond int64 become infinite).
  static SymRange of(Int lo, Int hi);
  static SymRange everything() { return {}; }

  bool lo_finite() const { return lo > -kInf; }
  bool hi_finite() const { return hi < kInf; }
  bool is_point() const { return lo == hi && lo_finite(); }
  bool contains(Int v) const { return lo <= v && v <= hi; }
  // The finite ends as int64 (nullopt when infinite).
  std::optional<int64_t> lo64() const;
  std::optional<int64_t> hi64() const;

  friend bool operator==(const SymRange&, const SymRange&) = default;
};

SymRange operator+(const SymRange& a, const SymRange& b);
SymRange operator-(const SymRange& a);
SymRange operator-(const SymRange& a, const SymRange& b);
SymRange operator*(const SymRange& a, const SymRange& b);
// a^exponent (exponent >= 1), tighter than repeated multiplication for even powers.
SymRange range_power(const SymRange& a, int exponent);
// Floor division and floor modulo by a divisor in `d`; only the divisor's positive part counts,
// because a divisor must be positive for the expression to be defined. With no positive divisor
// at all the expression is never defined and the answer is `everything()`.
SymRange range_floordiv(const SymRange& p, const SymRange& d);
SymRange range_floormod(const SymRange& p, const SymRange& d);
SymRange range_min(const SymRange& a, const SymRange& b);
SymRange range_max(const SymRange& a, const SymRange& b);

}  // namespace weft
