// Normal-form rules of min and max: nested applications flattened, constants folded, operands
// that another operand provably dominates dropped, the common part and factor taken out, one
// sign for the operands' terms.
#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "sym/expr.h"
#include "sym/interval.h"
#include "sym/normal_form.h"

namespace weft {
namespace {

SymAtomKind opposite(SymAtomKind kind) {
  return kind == SymAtomKind::min ? SymAtomKind::max : SymAtomKind::min;
}

// An operand flattens into at most this many: min(x, min(a, b) + min(c, d) + ...) would expand
// into exponentially many sums, so such an operand stays whole.
constexpr size_t kFlattenLimit = 16;

// min(x, rest + g * min(y, z)) = min(x, rest + g*y, rest + g*z) for g > 0, and a max inside a
// min with g < 0 flattens the same way (g * max(y, z) = min(g*y, g*z)). Returns false when the
// operand would expand into more than kFlattenLimit parts.
bool expand(SymAtomKind kind, const SymExpr& operand, std::vector<SymExpr>& parts) {
  for (const SymTerm& t : operand.terms()) {
    if (t.factors.size() != 1 || t.factors[0].exponent != 1) continue;
    const SymAtom& atom = *t.factors[0].atom;
    bool same = atom.kind == kind && t.coeff > 0;
    bool mirrored = atom.kind == opposite(kind) && t.coeff < 0;
    if (!same && !mirrored) continue;
    SymExpr rest = operand - sym_detail::scale(SymExpr::from_atom(t.factors[0].atom), t.coeff);
    for (const SymExpr& inner : atom.args)
      if (!expand(kind, rest + sym_detail::scale(inner, t.coeff), parts)) return false;
    return true;
  }
  if (parts.size() >= kFlattenLimit) return false;
  parts.push_back(operand);
  return true;
}

void flatten_into(SymAtomKind kind, const SymExpr& operand, std::vector<SymExpr>& out) {
  std::vector<SymExpr> parts;
  if (!expand(kind, operand, parts)) parts = {operand};
  for (SymExpr& p : parts) out.push_back(std::move(p));
}

// x is never better than y: for min, y <= x everywhere; for max, y >= x.
bool dominated_by(SymAtomKind kind, const SymExpr& x, const SymExpr& y) {
  SymRange d;
  try {
    d = natural_range(x - y);
  } catch (const UserError&) {
    return false;  // the difference overflows int64: no conclusion, keep both operands
  }
  return kind == SymAtomKind::min ? d.lo >= 0 : d.hi <= 0;
}

SymExpr min_or_max(SymAtomKind kind, std::vector<SymExpr> operands) {
  WEFT_CHECK(!operands.empty(), "min/max of no operands");
  std::vector<SymExpr> flat;
  for (const SymExpr& op : operands) flatten_into(kind, op, flat);

  // Constants fold into one; then the operands in canonical order, each once.
  std::vector<SymExpr> ops;
  std::optional<int64_t> folded;
  for (SymExpr& op : flat) {
    if (auto c = op.as_constant())
      folded =
          !folded ? *c : (kind == SymAtomKind::min ? std::min(*folded, *c) : std::max(*folded, *c));
    else
      ops.push_back(std::move(op));
  }
  if (folded) ops.push_back(*folded);
  std::sort(ops.begin(), ops.end());
  ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
  // Dropping dominated operands compares every pair.
  if (ops.size() > kSymMaxMinMaxOperands)
    WEFT_USER_ERROR(SourceLoc{}, "{} of {} distinct operands, more than the limit of {}",
                    kind == SymAtomKind::min ? "min" : "max", ops.size(), kSymMaxMinMaxOperands);

  // Drop dominated operands. Scanning in canonical order keeps the first of operands that are
  // equal on every binding, so the result does not depend on the input order.
  std::vector<SymExpr> kept;
  for (SymExpr& op : ops) {
    bool redundant = false;
    for (const SymExpr& k : kept) redundant = redundant || dominated_by(kind, op, k);
    if (redundant) continue;
    std::erase_if(kept, [&](const SymExpr& k) { return dominated_by(kind, k, op); });
    kept.push_back(std::move(op));
  }
  std::sort(kept.begin(), kept.end());
  if (kept.size() == 1) return kept[0];

  // Common part: terms every operand has with the same coefficient, plus the smallest constant.
  std::vector<SymTerm> common = kept[0].terms();
  int64_t shift = kept[0].constant();
  for (size_t i = 1; i < kept.size(); ++i) {
    const std::vector<SymTerm>& terms = kept[i].terms();
    std::erase_if(common, [&](const SymTerm& c) {
      return std::none_of(terms.begin(), terms.end(), [&](const SymTerm& t) {
        return t.coeff == c.coeff && sym_detail::compare_monomials(t.factors, c.factors) == 0;
      });
    });
    shift = std::min(shift, kept[i].constant());
  }
  SymExpr common_part = SymExpr::sum_of_terms(shift, std::move(common));
  int64_t g = 0;
  for (SymExpr& op : kept) {
    op = op - common_part;
    g = std::gcd(g, std::gcd(sym_detail::terms_content(op), op.constant()));
  }
  if (g > 1)
    for (SymExpr& op : kept) op = sym_detail::divide_exact(op, g);
  if (g < 1) g = 1;

  // One sign for the operands' terms: max(-a, -b) is written -min(a, b).
  bool any_term = false, all_negative = true;
  for (const SymExpr& op : kept) {
    for (const SymTerm& t : op.terms()) {
      any_term = true;
      all_negative = all_negative && t.coeff < 0;
    }
  }
  if (any_term && all_negative) {
    for (SymExpr& op : kept) op = -op;
    return common_part - sym_detail::scale(min_or_max(opposite(kind), std::move(kept)), g);
  }
  std::sort(kept.begin(), kept.end());
  SymExpr atom = SymExpr::from_atom(sym_detail::make_atom(kind, std::move(kept)));
  return common_part + sym_detail::scale(atom, g);
}

}  // namespace

SymExpr SymExpr::min_of(std::vector<SymExpr> operands) {
  return min_or_max(SymAtomKind::min, std::move(operands));
}

SymExpr SymExpr::max_of(std::vector<SymExpr> operands) {
  return min_or_max(SymAtomKind::max, std::move(operands));
}

}  // namespace weft
