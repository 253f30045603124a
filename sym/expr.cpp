// The normal form's representation: atoms, the canonical order, hashing, printing, and the ring
// operations (+, -, *) that keep polynomials normalized.
#include "sym/expr.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <string_view>

#include "core/error.h"
#include "sym/interval.h"
#include "sym/normal_form.h"

namespace weft {

struct SymExpr::Terms {
  std::vector<SymTerm> list;
  size_t hash = 0;
};

namespace {

constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();

size_t mix(size_t h, uint64_t v) {
  uint64_t x =
      v + 0x9E3779B97F4A7C15ull + (static_cast<uint64_t>(h) << 6) + (static_cast<uint64_t>(h) >> 2);
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return static_cast<size_t>(x ^ static_cast<uint64_t>(h));
}

size_t hash_name(std::string_view s) {
  uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a: the same value on every run and platform
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001B3ull;
  return static_cast<size_t>(h);
}

size_t hash_terms(const std::vector<SymTerm>& terms) {
  size_t h = terms.size();
  for (const SymTerm& t : terms) {
    h = mix(h, static_cast<uint64_t>(t.coeff));
    for (const SymFactor& f : t.factors) {
      h = mix(h, f.atom->hash);
      h = mix(h, static_cast<uint64_t>(f.exponent));
    }
  }
  return h;
}

bool atoms_equal(const SymAtom& a, const SymAtom& b);

bool terms_equal(const std::vector<SymTerm>& a, const std::vector<SymTerm>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].coeff != b[i].coeff || a[i].factors.size() != b[i].factors.size()) return false;
    for (size_t j = 0; j < a[i].factors.size(); ++j) {
      const SymFactor& fa = a[i].factors[j];
      const SymFactor& fb = b[i].factors[j];
      if (fa.exponent != fb.exponent || !atoms_equal(*fa.atom, *fb.atom)) return false;
    }
  }
  return true;
}

bool atoms_equal(const SymAtom& a, const SymAtom& b) {
  if (&a == &b) return true;
  if (a.hash != b.hash || a.kind != b.kind) return false;
  if (a.kind == SymAtomKind::var) return a.name == b.name && a.lo == b.lo && a.hi == b.hi;
  if (a.args.size() != b.args.size()) return false;
  for (size_t i = 0; i < a.args.size(); ++i)
    if (!(a.args[i] == b.args[i])) return false;
  return true;
}

int sign_of(int64_t a, int64_t b) {
  return a < b ? -1 : (a > b ? 1 : 0);
}

std::string bounds_str(int64_t lo, std::optional<int64_t> hi) {
  return hi ? fmt::format("[{}, {}]", lo, *hi) : fmt::format("[{}, inf)", lo);
}

const char* atom_kind_name(SymAtomKind kind) {
  switch (kind) {
    case SymAtomKind::var:
      return "var";
    case SymAtomKind::floordiv:
      return "floordiv";
    case SymAtomKind::mod:
      return "mod";
    case SymAtomKind::min:
      return "min";
    case SymAtomKind::max:
      return "max";
  }
  return "?";
}

SymAtomRef var_atom(std::string name, int64_t lo, std::optional<int64_t> hi) {
  auto atom = std::make_shared<SymAtom>();
  atom->kind = SymAtomKind::var;
  atom->name = std::move(name);
  atom->lo = lo;
  atom->hi = hi;
  atom->range = SymRange::of(lo, hi ? SymRange::Int{*hi} : SymRange::kInf);
  atom->hash = mix(mix(hash_name(atom->name), static_cast<uint64_t>(lo)),
                   hi ? static_cast<uint64_t>(*hi) : 0x5EEDull);
  return atom;
}

SymAtomRef make_var_atom(std::string name, int64_t lo, std::optional<int64_t> hi) {
  bool ident = !name.empty();
  for (size_t i = 0; i < name.size() && ident; ++i) ident = is_sym_name_char(name[i], i == 0);
  if (!ident) WEFT_USER_ERROR(SourceLoc{}, "'{}' is not a valid symbolic variable name", name);
  if (is_sym_keyword(name))
    WEFT_USER_ERROR(SourceLoc{}, "'{}' is a keyword and cannot name a symbolic variable", name);
  if (lo < -kSymMaxBound || lo > kSymMaxBound ||
      (hi && (*hi < -kSymMaxBound || *hi > kSymMaxBound)))
    WEFT_USER_ERROR(SourceLoc{}, "bounds {} of symbolic variable '{}' exceed +-2^62",
                    bounds_str(lo, hi), name);
  if (hi && *hi < lo)
    WEFT_USER_ERROR(SourceLoc{}, "symbolic variable '{}' has empty bounds {}", name,
                    bounds_str(lo, hi));
  return var_atom(std::move(name), lo, hi);
}

std::vector<SymFactor> multiply_monomials(const std::vector<SymFactor>& a,
                                          const std::vector<SymFactor>& b) {
  std::vector<SymFactor> out;
  out.reserve(a.size() + b.size());
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    int c = i == a.size() ? 1 : (j == b.size() ? -1 : compare(*a[i].atom, *b[j].atom));
    if (c < 0) {
      out.push_back(a[i++]);
    } else if (c > 0) {
      out.push_back(b[j++]);
    } else {
      int e = a[i].exponent + b[j].exponent;
      if (e > kSymMaxExponent)
        WEFT_USER_ERROR(SourceLoc{}, "symbolic expression raises {} to a power above {}",
                        a[i].atom->str(), kSymMaxExponent);
      out.push_back({a[i].atom, e});
      ++i;
      ++j;
    }
  }
  return out;
}

void append_monomial(std::string& out, const std::vector<SymFactor>& factors) {
  bool first = true;
  for (const SymFactor& f : factors) {
    std::string atom = f.atom->str();
    for (int e = 0; e < f.exponent; ++e) {
      if (!first) out += " * ";
      out += atom;
      first = false;
    }
  }
}

}  // namespace

// ---- the canonical order ----

int compare(const SymAtom& a, const SymAtom& b) {
  if (&a == &b) return 0;
  if (a.kind != b.kind) return a.kind < b.kind ? -1 : 1;
  if (a.kind == SymAtomKind::var) {
    int c = a.name.compare(b.name);
    if (c != 0) return c < 0 ? -1 : 1;
    WEFT_CHECK(a.lo == b.lo && a.hi == b.hi,
               "symbolic variable '{}' is used with two different bounds, {} and {}", a.name,
               bounds_str(a.lo, a.hi), bounds_str(b.lo, b.hi));
    return 0;
  }
  if (a.args.size() != b.args.size()) return a.args.size() < b.args.size() ? -1 : 1;
  for (size_t i = 0; i < a.args.size(); ++i)
    if (int c = compare(a.args[i], b.args[i])) return c;
  return 0;
}

int compare(const SymExpr& a, const SymExpr& b) {
  if (a.terms_ != b.terms_) {
    const std::vector<SymTerm>& ta = a.terms();
    const std::vector<SymTerm>& tb = b.terms();
    size_t n = std::min(ta.size(), tb.size());
    for (size_t i = 0; i < n; ++i) {
      if (int c = sym_detail::compare_monomials(ta[i].factors, tb[i].factors)) return c;
      if (int c = sign_of(ta[i].coeff, tb[i].coeff)) return c;
    }
    if (ta.size() != tb.size()) return ta.size() < tb.size() ? -1 : 1;
  }
  return sign_of(a.constant_, b.constant_);
}

bool operator==(const SymExpr& a, const SymExpr& b) {
  if (a.constant_ != b.constant_) return false;
  if (a.terms_ == b.terms_) return true;
  if (!a.terms_ || !b.terms_ || a.terms_->hash != b.terms_->hash) return false;
  return terms_equal(a.terms_->list, b.terms_->list);
}

bool is_sym_keyword(std::string_view name) {
  return name == "floordiv" || name == "mod" || name == "min" || name == "max";
}

bool is_sym_name_char(char c, bool first) {
  return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (!first && c >= '0' && c <= '9');
}

int64_t floor_div_int(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// ---- SymExpr ----

SymExpr::SymExpr(int64_t value) : constant_(value) {
  if (value == kMin64)
    WEFT_USER_ERROR(SourceLoc{}, "symbolic constant {} is outside [-(2^63-1), 2^63-1]", value);
}

std::optional<int64_t> SymExpr::as_constant() const {
  if (terms_) return std::nullopt;
  return constant_;
}

const std::vector<SymTerm>& SymExpr::terms() const {
  static const std::vector<SymTerm> kNone;  // immutable after its thread-safe initialization
  return terms_ ? terms_->list : kNone;
}

const SymAtom* SymExpr::as_atom() const {
  if (!terms_ || constant_ != 0 || terms_->list.size() != 1) return nullptr;
  const SymTerm& t = terms_->list[0];
  if (t.coeff != 1 || t.factors.size() != 1 || t.factors[0].exponent != 1) return nullptr;
  return t.factors[0].atom.get();
}

size_t SymExpr::hash() const {
  return mix(terms_ ? terms_->hash : 0x7E57ull, static_cast<uint64_t>(constant_));
}

std::string SymExpr::str() const {
  if (!terms_) return std::to_string(constant_);
  std::string out;
  bool first = true;
  // Positive terms first (n - m rather than -m + n), each group in canonical order.
  for (bool positive : {true, false}) {
    for (const SymTerm& t : terms_->list) {
      if ((t.coeff > 0) != positive) continue;
      int64_t magnitude = t.coeff < 0 ? -t.coeff : t.coeff;
      if (first) {
        if (t.coeff < 0) out += "-";
      } else {
        out += t.coeff < 0 ? " - " : " + ";
      }
      if (magnitude != 1) out += std::to_string(magnitude) + " * ";
      append_monomial(out, t.factors);
      first = false;
    }
  }
  if (constant_ > 0) out += " + " + std::to_string(constant_);
  if (constant_ < 0) out += " - " + std::to_string(-constant_);
  return out;
}

SymExpr SymExpr::from_atom(SymAtomRef atom) {
  WEFT_CHECK(atom != nullptr, "null symbolic atom");
  std::vector<SymTerm> terms(1);
  terms[0].coeff = 1;
  terms[0].factors.push_back({std::move(atom), 1});
  auto t = std::make_shared<Terms>();
  t->hash = hash_terms(terms);
  t->list = std::move(terms);
  return SymExpr(0, std::move(t));
}

SymExpr SymExpr::sum_of_terms(int64_t constant, std::vector<SymTerm> terms) {
  for (const SymTerm& t : terms) {
    for (size_t i = 0; i < t.factors.size(); ++i) {
      WEFT_CHECK(t.factors[i].atom && t.factors[i].exponent >= 1, "malformed symbolic factor");
      WEFT_CHECK(i == 0 || compare(*t.factors[i - 1].atom, *t.factors[i].atom) < 0,
                 "symbolic monomial factors out of order");
    }
  }
  std::stable_sort(terms.begin(), terms.end(), [](const SymTerm& a, const SymTerm& b) {
    return sym_detail::compare_monomials(a.factors, b.factors) < 0;
  });
  std::vector<SymTerm> merged;
  merged.reserve(terms.size());
  for (SymTerm& t : terms) {
    if (t.factors.empty()) {
      constant = sym_detail::checked_add(constant, t.coeff, "addition");
    } else if (!merged.empty() &&
               sym_detail::compare_monomials(merged.back().factors, t.factors) == 0) {
      merged.back().coeff = sym_detail::checked_add(merged.back().coeff, t.coeff, "addition");
    } else {
      merged.push_back(std::move(t));
    }
  }
  std::erase_if(merged, [](const SymTerm& t) { return t.coeff == 0; });
  if (merged.size() > kSymMaxTerms)
    WEFT_USER_ERROR(SourceLoc{}, "symbolic expression has {} terms, more than the limit of {}",
                    merged.size(), kSymMaxTerms);
  if (merged.empty()) return SymExpr(constant);
  auto t = std::make_shared<Terms>();
  t->hash = hash_terms(merged);
  t->list = std::move(merged);
  return SymExpr(constant, std::move(t));
}

SymExpr operator+(const SymExpr& a, const SymExpr& b) {
  int64_t constant = sym_detail::checked_add(a.constant_, b.constant_, "addition");
  if (!a.terms_) return SymExpr(constant, b.terms_);
  if (!b.terms_) return SymExpr(constant, a.terms_);
  const std::vector<SymTerm>& ta = a.terms_->list;
  const std::vector<SymTerm>& tb = b.terms_->list;
  std::vector<SymTerm> out;
  out.reserve(ta.size() + tb.size());
  size_t i = 0, j = 0;
  while (i < ta.size() || j < tb.size()) {
    int c =
        i == ta.size()
            ? 1
            : (j == tb.size() ? -1 : sym_detail::compare_monomials(ta[i].factors, tb[j].factors));
    if (c < 0) {
      out.push_back(ta[i++]);
    } else if (c > 0) {
      out.push_back(tb[j++]);
    } else {
      int64_t coeff = sym_detail::checked_add(ta[i].coeff, tb[j].coeff, "addition");
      if (coeff != 0) out.push_back({coeff, ta[i].factors});
      ++i;
      ++j;
    }
  }
  if (out.size() > kSymMaxTerms)
    WEFT_USER_ERROR(SourceLoc{}, "symbolic expression has {} terms, more than the limit of {}",
                    out.size(), kSymMaxTerms);
  if (out.empty()) return SymExpr(constant);
  auto t = std::make_shared<SymExpr::Terms>();
  t->hash = hash_terms(out);
  t->list = std::move(out);
  return SymExpr(constant, std::move(t));
}

SymExpr operator-(const SymExpr& a) {
  return sym_detail::scale(a, -1);
}

SymExpr operator-(const SymExpr& a, const SymExpr& b) {
  return a + (-b);
}

SymExpr operator*(const SymExpr& a, const SymExpr& b) {
  if (!a.terms_) return sym_detail::scale(b, a.constant_);
  if (!b.terms_) return sym_detail::scale(a, b.constant_);
  const std::vector<SymTerm>& ta = a.terms_->list;
  const std::vector<SymTerm>& tb = b.terms_->list;
  size_t products = (ta.size() + 1) * (tb.size() + 1);
  if (products > 4 * kSymMaxTerms)
    WEFT_USER_ERROR(SourceLoc{}, "symbolic product of {} and {} terms is too large", ta.size() + 1,
                    tb.size() + 1);
  std::vector<SymTerm> out;
  out.reserve(products);
  for (const SymTerm& x : ta) {
    for (const SymTerm& y : tb)
      out.push_back({sym_detail::checked_mul(x.coeff, y.coeff, "multiplication"),
                     multiply_monomials(x.factors, y.factors)});
    if (b.constant_ != 0)
      out.push_back({sym_detail::checked_mul(x.coeff, b.constant_, "multiplication"), x.factors});
  }
  if (a.constant_ != 0)
    for (const SymTerm& y : tb)
      out.push_back({sym_detail::checked_mul(a.constant_, y.coeff, "multiplication"), y.factors});
  return SymExpr::sum_of_terms(sym_detail::checked_mul(a.constant_, b.constant_, "multiplication"),
                               std::move(out));
}

// ---- SymVar ----

SymVar::SymVar(std::string name, int64_t lo, std::optional<int64_t> hi)
    : SymExpr(from_atom(make_var_atom(std::move(name), lo, hi))) {}

SymVar::SymVar(const SymAtomRef& var_atom) : SymExpr(from_atom(var_atom)) {
  WEFT_CHECK(var_atom->kind == SymAtomKind::var, "{} is not a variable", var_atom->str());
}

const std::string& SymVar::name() const {
  return as_atom()->name;
}
int64_t SymVar::lo() const {
  return as_atom()->lo;
}
std::optional<int64_t> SymVar::hi() const {
  return as_atom()->hi;
}

std::string SymVar::decl_str() const {
  const SymAtom& a = *as_atom();
  if (a.hi) return fmt::format("{} <= {} <= {}", a.lo, a.name, *a.hi);
  return fmt::format("{} <= {}", a.lo, a.name);
}

std::string SymAtom::str() const {
  if (kind == SymAtomKind::var) return name;
  std::string out = atom_kind_name(kind);
  out += "(";
  for (size_t i = 0; i < args.size(); ++i) {
    if (i) out += ", ";
    out += args[i].str();
  }
  return out + ")";
}

// ---- helpers shared by the rule files ----

namespace sym_detail {

int64_t checked_add(int64_t a, int64_t b, const char* what) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r) || r == kMin64)
    WEFT_USER_ERROR(SourceLoc{}, "symbolic {} overflows int64 ({} + {})", what, a, b);
  return r;
}

int64_t checked_mul(int64_t a, int64_t b, const char* what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r) || r == kMin64)
    WEFT_USER_ERROR(SourceLoc{}, "symbolic {} overflows int64 ({} * {})", what, a, b);
  return r;
}

SymVar hidden_var(const std::string& name, int64_t lo, int64_t hi) {
  WEFT_CHECK(!name.empty() && name[0] == '%', "hidden variable names start with '%'");
  return SymVar(var_atom(name, lo, hi));
}

SymAtomRef make_atom(SymAtomKind kind, std::vector<SymExpr> args) {
  WEFT_CHECK(kind != SymAtomKind::var, "variables are made by SymVar");
  auto atom = std::make_shared<SymAtom>();
  atom->kind = kind;
  size_t h = mix(0xA70Eull, static_cast<uint64_t>(kind));
  for (const SymExpr& a : args) h = mix(h, a.hash());
  atom->hash = h;
  switch (kind) {
    case SymAtomKind::floordiv:
      WEFT_CHECK(args.size() == 2, "floordiv takes two arguments");
      atom->range = range_floordiv(natural_range(args[0]), natural_range(args[1]));
      break;
    case SymAtomKind::mod:
      WEFT_CHECK(args.size() == 2, "mod takes two arguments");
      atom->range = range_floormod(natural_range(args[0]), natural_range(args[1]));
      break;
    case SymAtomKind::min:
    case SymAtomKind::max: {
      WEFT_CHECK(args.size() >= 2, "min/max take two or more arguments");
      SymRange r = natural_range(args[0]);
      for (size_t i = 1; i < args.size(); ++i)
        r = kind == SymAtomKind::min ? range_min(r, natural_range(args[i]))
                                     : range_max(r, natural_range(args[i]));
      atom->range = r;
      break;
    }
    case SymAtomKind::var:
      break;
  }
  atom->args = std::move(args);
  return atom;
}

int compare_monomials(const std::vector<SymFactor>& a, const std::vector<SymFactor>& b) {
  // Graded: higher total degree first (2 * m * n + 6 * m), then by atoms.
  int degree_a = 0, degree_b = 0;
  for (const SymFactor& f : a) degree_a += f.exponent;
  for (const SymFactor& f : b) degree_b += f.exponent;
  if (degree_a != degree_b) return degree_a > degree_b ? -1 : 1;
  size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    if (int c = compare(*a[i].atom, *b[i].atom)) return c;
    // Higher powers first: n * n before n.
    if (a[i].exponent != b[i].exponent) return a[i].exponent > b[i].exponent ? -1 : 1;
  }
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  return 0;
}

int64_t terms_content(const SymExpr& e) {
  int64_t g = 0;
  for (const SymTerm& t : e.terms()) g = std::gcd(g, t.coeff);
  return g;
}

SymExpr divide_exact(const SymExpr& e, int64_t k) {
  WEFT_CHECK(k != 0 && e.constant() % k == 0, "inexact division of {} by {}", e.str(), k);
  std::vector<SymTerm> terms = e.terms();
  for (SymTerm& t : terms) {
    WEFT_CHECK(t.coeff % k == 0, "inexact division of {} by {}", e.str(), k);
    t.coeff /= k;
  }
  return SymExpr::sum_of_terms(e.constant() / k, std::move(terms));
}

SymExpr scale(const SymExpr& e, int64_t k) {
  if (k == 0) return SymExpr(0);
  if (k == 1) return e;
  std::vector<SymTerm> terms = e.terms();
  for (SymTerm& t : terms) t.coeff = checked_mul(t.coeff, k, "multiplication");
  return SymExpr::sum_of_terms(checked_mul(e.constant(), k, "multiplication"), std::move(terms));
}

bool split_by_monomial(const SymExpr& e, const SymExpr& divisor, SymExpr& quotient, SymExpr& rest) {
  if (divisor.constant() != 0 || divisor.terms().size() != 1) return false;
  const SymTerm& d = divisor.terms()[0];
  std::vector<SymTerm> q, r;
  for (const SymTerm& t : e.terms()) {
    bool divides = t.coeff % d.coeff == 0;
    std::vector<SymFactor> left;
    size_t j = 0;
    for (size_t i = 0; i < t.factors.size() && divides; ++i) {
      int c = j == d.factors.size() ? -1 : compare(*t.factors[i].atom, *d.factors[j].atom);
      if (c < 0) {
        left.push_back(t.factors[i]);
      } else if (c > 0) {
        divides = false;  // the divisor has an atom the term lacks
      } else {
        int e_left = t.factors[i].exponent - d.factors[j].exponent;
        if (e_left < 0) divides = false;
        if (e_left > 0) left.push_back({t.factors[i].atom, e_left});
        ++j;
      }
    }
    if (divides && j == d.factors.size())
      q.push_back({t.coeff / d.coeff, std::move(left)});
    else
      r.push_back(t);
  }
  quotient = SymExpr::sum_of_terms(0, std::move(q));
  rest = SymExpr::sum_of_terms(e.constant(), std::move(r));
  return true;
}

}  // namespace sym_detail
}  // namespace weft
