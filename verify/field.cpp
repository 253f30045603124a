// Modular exponentiation, inversion and conversions of the verifier's prime fields.
#include "verify/field.h"

#include "core/error.h"

namespace weft::ff {

uint64_t Field::pow(uint64_t a, uint64_t e) const {
  uint64_t r = 1 % m_;
  while (e != 0) {
    if (e & 1) r = mul(r, a);
    a = mul(a, a);
    e >>= 1;
  }
  return r;
}

uint64_t Field::inv(uint64_t a) const {
  WEFT_CHECK(a != 0 && a < m_, "inverse of {} modulo {}", a, m_);
  int64_t t = 0, nt = 1;
  auto r = static_cast<int64_t>(m_), nr = static_cast<int64_t>(a);
  while (nr != 0) {
    int64_t qt = r / nr;
    int64_t tmp = t - qt * nt;
    t = nt;
    nt = tmp;
    tmp = r - qt * nr;
    r = nr;
    nr = tmp;
  }
  WEFT_CHECK(r == 1, "{} has no inverse modulo {}", a, m_);
  if (t < 0) t += static_cast<int64_t>(m_);
  return static_cast<uint64_t>(t);
}

uint64_t Field::from_int(int64_t v) const {
  auto m = static_cast<int64_t>(m_);
  int64_t r = v % m;
  if (r < 0) r += m;
  return static_cast<uint64_t>(r);
}

std::optional<uint64_t> Field::from_rational(const Rational& r) const {
  uint64_t den = from_int(r.den());
  if (den == 0) return std::nullopt;
  return mul(from_int(r.num()), inv(den));
}

namespace {
uint64_t mulmod64(uint64_t a, uint64_t b, uint64_t m) {
  return static_cast<uint64_t>(static_cast<unsigned __int128>(a) * b % m);
}
uint64_t powmod64(uint64_t a, uint64_t e, uint64_t m) {
  uint64_t r = 1;
  a %= m;
  while (e != 0) {
    if (e & 1) r = mulmod64(r, a, m);
    a = mulmod64(a, a, m);
    e >>= 1;
  }
  return r;
}
}  // namespace

bool is_prime(uint64_t n) {
  if (n < 2) return false;
  for (uint64_t small : {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37})
    if (n % small == 0) return n == small;
  uint64_t d = n - 1;
  int s = 0;
  while ((d & 1) == 0) {
    d >>= 1;
    ++s;
  }
  // These bases are a deterministic witness set for every n < 2^64.
  for (uint64_t a : {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37}) {
    uint64_t x = powmod64(a, d, n);
    if (x == 1 || x == n - 1) continue;
    bool composite = true;
    for (int i = 1; i < s && composite; ++i) {
      x = mulmod64(x, x, n);
      if (x == n - 1) composite = false;
    }
    if (composite) return false;
  }
  return true;
}

}  // namespace weft::ff
