// Normal-form rules of floordiv and mod: multiples of the divisor leave the atom (coefficients
// and constant end up in [0, divisor)), the rest is reduced by the common factor of divisor and
// coefficients, and ranges decide what they can.
#include <fmt/format.h>

#include <numeric>

#include "core/error.h"
#include "sym/expr.h"
#include "sym/interval.h"
#include "sym/normal_form.h"

namespace weft {
namespace {

using sym_detail::checked_mul;

// a - c * floor(a / c) for c > 0, in [0, c); computed without the product, which can overflow.
int64_t floor_mod_int(int64_t a, int64_t c) {
  int64_t r = a % c;
  return r < 0 ? r + c : r;
}

// The parts of a constant-divisor application, after taking out the multiples of c:
//   numerator = c * whole + g * inner - g * r1 + r, where inner = S + r1, the coefficients of S
//   lie in [1, c/g), gcd(coefficients of S, c/g) = 1 and 0 <= r1 < c/g.
// floordiv(numerator, c) = whole + floordiv(inner, c/g)       (floor(floor(x/g)/k) = floor(x/gk))
// mod(numerator, c)      = g * mod(inner, c/g) + r mod g
struct ConstantDivision {
  SymExpr whole;                // the quotient of the terms and constant part that c divides
  SymExpr inner;                // 0 when c divides everything
  int64_t reduced_divisor = 1;  // c/g
  int64_t g = 1;
  int64_t remainder_mod_g = 0;  // r mod g
};

ConstantDivision split_constant_division(const SymExpr& a, int64_t c) {
  // Each coefficient splits as c * q + r with 0 <= r < c, as the constant does: one
  // representative per residue class, so floordiv(5 * s, 4) and s + floordiv(s, 4) agree.
  std::vector<SymTerm> quotient, rest;
  for (const SymTerm& t : a.terms()) {
    int64_t q = floor_div_int(t.coeff, c);
    int64_t r = floor_mod_int(t.coeff, c);
    if (q != 0) quotient.push_back({q, t.factors});
    if (r != 0) rest.push_back({r, t.factors});
  }
  int64_t q = floor_div_int(a.constant(), c);
  int64_t r = floor_mod_int(a.constant(), c);
  ConstantDivision out;
  out.whole = SymExpr::sum_of_terms(q, std::move(quotient));
  if (rest.empty()) {
    out.remainder_mod_g = r;
    out.g = c;
    return out;
  }
  int64_t g = c;
  for (const SymTerm& t : rest) g = std::gcd(g, t.coeff);
  for (SymTerm& t : rest) t.coeff /= g;
  out.inner = SymExpr::sum_of_terms(r / g, std::move(rest));
  out.reduced_divisor = c / g;
  out.g = g;
  out.remainder_mod_g = r % g;
  return out;
}

// When the range of x sits inside one multiple of k, floor(x / k) is that constant.
std::optional<int64_t> constant_quotient(const SymExpr& x, int64_t k) {
  SymRange r = natural_range(x);
  auto lo = r.lo64(), hi = r.hi64();
  if (!lo || !hi) return std::nullopt;
  int64_t qlo = floor_div_int(*lo, k);
  if (qlo != floor_div_int(*hi, k)) return std::nullopt;
  return qlo;
}

// inner = atom(P, d) + r1 for an application of `kind` with a constant divisor d.
bool is_shifted_application(const SymExpr& inner, SymAtomKind kind, const SymAtom*& atom) {
  if (inner.terms().size() != 1) return false;
  const SymTerm& t = inner.terms()[0];
  if (t.coeff != 1 || t.factors.size() != 1 || t.factors[0].exponent != 1) return false;
  atom = t.factors[0].atom.get();
  return atom->kind == kind && atom->args[1].is_constant();
}

SymExpr floordiv_reduced(const SymExpr& inner, int64_t k) {
  if (auto q = constant_quotient(inner, k)) return *q;
  const SymAtom* nested;
  if (is_shifted_application(inner, SymAtomKind::floordiv, nested)) {
    // floor((floor(P/d) + r1) / k) = floor((P + r1*d) / (d*k))
    int64_t d = nested->args[1].constant();
    int64_t dk;
    if (!__builtin_mul_overflow(d, k, &dk))
      return floordiv(nested->args[0] + SymExpr(checked_mul(inner.constant(), d, "floordiv")),
                      SymExpr(dk));
  }
  return SymExpr::from_atom(sym_detail::make_atom(SymAtomKind::floordiv, {inner, SymExpr(k)}));
}

SymExpr mod_reduced(const SymExpr& inner, int64_t k) {
  if (auto q = constant_quotient(inner, k)) return inner - SymExpr(checked_mul(*q, k, "mod"));
  const SymAtom* nested;
  if (is_shifted_application(inner, SymAtomKind::mod, nested) &&
      nested->args[1].constant() % k == 0) {
    // mod(P, d) = P (mod k) when k divides d
    return floormod(nested->args[0] + SymExpr(inner.constant()), SymExpr(k));
  }
  return SymExpr::from_atom(sym_detail::make_atom(SymAtomKind::mod, {inner, SymExpr(k)}));
}

void check_divisor(const char* op, const SymExpr& a, const SymExpr& b) {
  if (auto c = b.as_constant()) {
    if (*c <= 0)
      WEFT_USER_ERROR(SourceLoc{}, "{}({}, {}): the divisor must be positive", op, a.str(), *c);
    return;
  }
  SymRange r = natural_range(b);
  if (r.hi < 1)
    WEFT_USER_ERROR(SourceLoc{}, "{}({}, {}): the divisor is never positive (at most {})", op,
                    a.str(), b.str(), static_cast<int64_t>(r.hi));
}

// 0 <= a < b everywhere: floordiv(a, b) = 0 and mod(a, b) = a.
bool below_divisor(const SymExpr& a, const SymExpr& b) {
  SymRange ra = natural_range(a), rb = natural_range(b);
  return ra.lo >= 0 && ra.hi_finite() && ra.hi < rb.lo;
}

}  // namespace

SymExpr floordiv(const SymExpr& a, const SymExpr& b) {
  check_divisor("floordiv", a, b);
  if (auto c = b.as_constant()) {
    if (auto ac = a.as_constant()) return floor_div_int(*ac, *c);
    if (*c == 1) return a;
    ConstantDivision parts = split_constant_division(a, *c);
    if (parts.inner.is_constant()) return parts.whole;
    return parts.whole + floordiv_reduced(parts.inner, parts.reduced_divisor);
  }
  // A symbolic divisor (positive wherever the expression is defined).
  if (a == SymExpr(0)) return 0;
  if (a == b) return 1;
  SymExpr quotient, rest;
  if (sym_detail::split_by_monomial(a, b, quotient, rest) && !(quotient == SymExpr(0)))
    return quotient + floordiv(rest, b);
  if (below_divisor(a, b)) return 0;
  return SymExpr::from_atom(sym_detail::make_atom(SymAtomKind::floordiv, {a, b}));
}

SymExpr floormod(const SymExpr& a, const SymExpr& b) {
  check_divisor("mod", a, b);
  if (auto c = b.as_constant()) {
    if (auto ac = a.as_constant()) return floor_mod_int(*ac, *c);
    if (*c == 1) return 0;
    ConstantDivision parts = split_constant_division(a, *c);
    if (parts.inner.is_constant()) return parts.remainder_mod_g;
    return sym_detail::scale(mod_reduced(parts.inner, parts.reduced_divisor), parts.g) +
           SymExpr(parts.remainder_mod_g);
  }
  if (a == SymExpr(0) || a == b) return 0;
  SymExpr quotient, rest;
  if (sym_detail::split_by_monomial(a, b, quotient, rest) && !(quotient == SymExpr(0)))
    return floormod(rest, b);
  if (below_divisor(a, b)) return a;
  return SymExpr::from_atom(sym_detail::make_atom(SymAtomKind::mod, {a, b}));
}

}  // namespace weft
