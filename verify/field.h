// Arithmetic in the prime fields Z_p and Z_q (q | p - 1) of the finite-field equivalence verifier.
#pragma once

#include <cstdint>
#include <optional>

#include "core/rational.h"

namespace weft::ff {

// p = 2q + 1 is a safe prime: the squares other than 1 are exactly the elements of order q, and
// both primes stay below 2^52 so the AVX-512 IFMA multiply-add (52-bit limbs) applies to residues.
inline constexpr uint64_t kQ = 1125899906842391ULL;  // prime, 2^50 - 233
inline constexpr uint64_t kP = 2 * kQ + 1;           // prime, < 2^51

// Residue arithmetic modulo one prime m < 2^52. All arguments must already be reduced.
class Field {
 public:
  explicit constexpr Field(uint64_t m) : m_(m), inv_(1.0 / static_cast<double>(m)) {}
  uint64_t modulus() const { return m_; }

  uint64_t add(uint64_t a, uint64_t b) const {
    uint64_t s = a + b;
    return s >= m_ ? s - m_ : s;
  }
  uint64_t sub(uint64_t a, uint64_t b) const { return a >= b ? a - b : a + m_ - b; }
  uint64_t neg(uint64_t a) const { return a == 0 ? 0 : m_ - a; }
  // The quotient estimated in double is off by at most one for m < 2^52 (relative error of the
  // product ~2^-52, quotient < 2^52), so the exact 64-bit remainder needs one correction step.
  uint64_t mul(uint64_t a, uint64_t b) const {
    auto qt = static_cast<uint64_t>(static_cast<double>(a) * static_cast<double>(b) * inv_);
    auto r = static_cast<int64_t>(a * b - qt * m_);
    if (r < 0) r += static_cast<int64_t>(m_);
    if (r >= static_cast<int64_t>(m_)) r -= static_cast<int64_t>(m_);
    if (r < 0) r += static_cast<int64_t>(m_);
    return static_cast<uint64_t>(r);
  }
  uint64_t pow(uint64_t a, uint64_t e) const;
  // Inverse of a non-zero residue (extended Euclid).
  uint64_t inv(uint64_t a) const;
  // Any 128-bit value reduced.
  uint64_t reduce128(unsigned __int128 x) const { return static_cast<uint64_t>(x % m_); }
  // A signed 64-bit integer reduced.
  uint64_t from_int(int64_t v) const;
  // num/den mapped into the field; nullopt when den ≡ 0 (mod m).
  std::optional<uint64_t> from_rational(const Rational& r) const;
  // A uniform-looking residue from 64 random bits (multiply-shift; bias < m / 2^64).
  uint64_t from_bits(uint64_t bits) const {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(bits) * m_) >> 64);
  }

 private:
  uint64_t m_;
  double inv_;
};

inline const Field& field_p() {
  static const Field f(kP);
  return f;
}
inline const Field& field_q() {
  static const Field f(kQ);
  return f;
}

// A strong 64-bit mixer (splitmix64 finalizer): the seeded hashes behind random inputs,
// uninterpreted functions and the random order used for max.
inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
inline uint64_t mix64(uint64_t a, uint64_t b) {
  return mix64(a ^ mix64(b + 0x632be59bd9b4e019ULL));
}
inline uint64_t mix64(uint64_t a, uint64_t b, uint64_t c) {
  return mix64(mix64(a, b), c);
}

// Deterministic Miller-Rabin for 64-bit integers (used by tests and at start-up checks).
bool is_prime(uint64_t n);

}  // namespace weft::ff
