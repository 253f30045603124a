// Saturating interval arithmetic over the integers (see range.h for the soundness argument).
#include "sym/range.h"

#include <algorithm>
#include <limits>

namespace weft {
namespace {

using Int = SymRange::Int;
constexpr Int kInf = SymRange::kInf;
constexpr Int kMax64 = std::numeric_limits<int64_t>::max();

bool is_huge(Int v) {
  return v > kMax64 || v < -kMax64;
}
// A value computed exactly, or ±kInf once its magnitude leaves int64 (the sign is kept).
Int saturate(Int v) {
  if (v > kMax64) return kInf;
  if (v < -kMax64) return -kInf;
  return v;
}

Int mul_end(Int a, Int b) {
  if (a == 0 || b == 0) return 0;
  if (is_huge(a) || is_huge(b)) return ((a < 0) != (b < 0)) ? -kInf : kInf;
  return saturate(a * b);  // both below 2^63 in magnitude: the product fits in 127 bits
}

Int add_end(Int a, Int b) {
  if (is_huge(a)) return a;
  if (is_huge(b)) return b;
  return saturate(a + b);
}

Int pow_end(Int x, int exponent) {
  Int result = 1;
  for (int i = 0; i < exponent; ++i) {
    result = mul_end(result, x);
    if (is_huge(result)) return (x < 0 && exponent % 2 == 1) ? -kInf : kInf;
  }
  return result;
}

Int floor_div(Int x, Int d) {
  Int q = x / d;
  if ((x % d != 0) && ((x < 0) != (d < 0))) --q;
  return q;
}

// floor(x / d) for a divisor d >= 1 that may be infinite.
Int fdiv_end(Int x, Int d) {
  if (is_huge(x)) return x;
  if (is_huge(d)) return x >= 0 ? 0 : -1;
  return floor_div(x, d);
}

}  // namespace

SymRange SymRange::of(Int lo, Int hi) {
  SymRange r;
  // A lower end beyond int64 is replaced by a smaller valid lower bound, never by +infinity (and
  // likewise for the upper end), so clamping only ever widens the range.
  r.lo = lo > kMax64 ? kMax64 : (lo < -kMax64 ? -kInf : lo);
  r.hi = hi < -kMax64 ? -kMax64 : (hi > kMax64 ? kInf : hi);
  return r;
}

std::optional<int64_t> SymRange::lo64() const {
  if (!lo_finite()) return std::nullopt;
  return static_cast<int64_t>(lo);
}

std::optional<int64_t> SymRange::hi64() const {
  if (!hi_finite()) return std::nullopt;
  return static_cast<int64_t>(hi);
}

SymRange operator+(const SymRange& a, const SymRange& b) {
  return SymRange::of(add_end(a.lo, b.lo), add_end(a.hi, b.hi));
}

SymRange operator-(const SymRange& a) {
  return SymRange::of(-a.hi, -a.lo);
}

SymRange operator-(const SymRange& a, const SymRange& b) {
  return a + (-b);
}

SymRange operator*(const SymRange& a, const SymRange& b) {
  Int c[4] = {mul_end(a.lo, b.lo), mul_end(a.lo, b.hi), mul_end(a.hi, b.lo), mul_end(a.hi, b.hi)};
  return SymRange::of(*std::min_element(c, c + 4), *std::max_element(c, c + 4));
}

SymRange range_power(const SymRange& a, int exponent) {
  if (exponent <= 1) return a;
  Int plo = pow_end(a.lo, exponent);
  Int phi = pow_end(a.hi, exponent);
  if (exponent % 2 == 1) return SymRange::of(plo, phi);
  if (a.lo >= 0) return SymRange::of(plo, phi);
  if (a.hi <= 0) return SymRange::of(phi, plo);
  return SymRange::of(0, std::max(plo, phi));
}

SymRange range_floordiv(const SymRange& p, const SymRange& d) {
  if (d.hi < 1) return SymRange::everything();
  Int dlo = std::max<Int>(d.lo, 1);
  // For a positive divisor floor(p/q) rises with p, and for a fixed p it is monotone in q, so the
  // extremes lie at the corners.
  Int lo = std::min(fdiv_end(p.lo, dlo), fdiv_end(p.lo, d.hi));
  Int hi = std::max(fdiv_end(p.hi, dlo), fdiv_end(p.hi, d.hi));
  return SymRange::of(lo, hi);
}

SymRange range_floormod(const SymRange& p, const SymRange& d) {
  if (d.hi < 1) return SymRange::everything();
  Int dlo = std::max<Int>(d.lo, 1);
  if (p.lo >= 0 && p.hi < dlo) return p;  // x mod q == x when 0 <= x < q
  if (dlo == d.hi && p.lo_finite() && p.hi_finite() &&
      floor_div(p.lo, dlo) == floor_div(p.hi, dlo)) {
    Int shift = floor_div(p.lo, dlo) * dlo;
    return SymRange::of(p.lo - shift, p.hi - shift);
  }
  Int hi = d.hi_finite() ? d.hi - 1 : kInf;
  if (p.lo >= 0) hi = std::min(hi, p.hi);
  return SymRange::of(0, hi);
}

SymRange range_min(const SymRange& a, const SymRange& b) {
  return SymRange::of(std::min(a.lo, b.lo), std::min(a.hi, b.hi));
}

SymRange range_max(const SymRange& a, const SymRange& b) {
  return SymRange::of(std::max(a.lo, b.lo), std::max(a.hi, b.hi));
}

}  // namespace weft
