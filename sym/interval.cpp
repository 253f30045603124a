// Interval reasoning over the normal form: the natural extension and its monotone refinement.
#include "sym/interval.h"

#include <algorithm>

#include "core/error.h"
#include "sym/rewrite.h"

namespace weft {
namespace {

using Int = SymRange::Int;

// Fixing a variable costs a substitution and a renormalization; a few are plenty for the
// expressions shapes are made of.
constexpr int kMaxFixings = 16;

// The best bound found for e's maximum (upper) or minimum (!upper): fix one variable in which e
// is monotone at the bound where e is extreme, and recurse on what is left.
Int extreme(const SymExpr& e, bool upper, int& budget) {
  SymRange natural = natural_range(e);
  Int best = upper ? natural.hi : natural.lo;
  if (e.is_constant() || budget <= 0) return best;
  for (const SymVar& v : sym_variables(e)) {
    if (budget <= 0) break;
    --budget;
    try {
      SymRange step = natural_range(substitute(e, {{v.name(), v + 1}}) - e);
      bool rising = step.lo >= 0, falling = step.hi <= 0;
      if (!rising && !falling) continue;
      bool at_hi = upper == rising;
      if (at_hi && !v.hi()) continue;  // the extreme is approached as v grows without bound
      SymExpr fixed = substitute(e, {{v.name(), at_hi ? *v.hi() : v.lo()}});
      Int inner = extreme(fixed, upper, budget);
      return upper ? std::min(best, inner) : std::max(best, inner);
    } catch (const UserError&) {
      continue;  // the substitution overflows int64: this variable gives no refinement
    }
  }
  return best;
}

// The natural range is already exact when every atom is a variable with lo >= 0 and every
// coefficient has one sign: each term is then monotone in every variable, the same way, so all
// variables at their lower (upper) bounds reach both extremes at once.
bool natural_range_is_exact(const SymExpr& e) {
  bool positive = false, negative = false;
  for (const SymTerm& t : e.terms()) {
    (t.coeff > 0 ? positive : negative) = true;
    for (const SymFactor& f : t.factors)
      if (f.atom->kind != SymAtomKind::var || f.atom->lo < 0) return false;
  }
  return !(positive && negative);
}

// One end of `bounds`: the upper end when `upper`.
Int refined_end(const SymExpr& e, const SymRange& natural, bool upper) {
  Int end = upper ? natural.hi : natural.lo;
  // A variable may only be fixed at a bound when e is defined at every binding; otherwise the
  // values between may include undefined points and monotonicity says nothing across them.
  if (e.is_constant() || natural.is_point() || natural_range_is_exact(e) || !sym_always_defined(e))
    return end;
  int budget = kMaxFixings;
  Int refined = extreme(e, upper, budget);
  return upper ? std::min(refined, end) : std::max(refined, end);
}

}  // namespace

SymRange natural_range(const SymExpr& e) {
  SymRange total = SymRange::point(e.constant());
  for (const SymTerm& t : e.terms()) {
    SymRange product = SymRange::point(t.coeff);
    for (const SymFactor& f : t.factors) product = product * range_power(f.atom->range, f.exponent);
    total = total + product;
  }
  return total;
}

SymRange bounds(const SymExpr& e) {
  SymRange natural = natural_range(e);
  return SymRange::of(refined_end(e, natural, false), refined_end(e, natural, true));
}

std::optional<int64_t> upper_bound(const SymExpr& e) {
  return SymRange::of(-SymRange::kInf, refined_end(e, natural_range(e), true)).hi64();
}

std::optional<int64_t> lower_bound(const SymExpr& e) {
  return SymRange::of(refined_end(e, natural_range(e), false), SymRange::kInf).lo64();
}

}  // namespace weft
