// Bounds of dynamic dims narrowed to what the model allows: when a shape rule's requirement fails
// over a dim bounded by weft's default (BERT's position table of 64 rows read at `seq` <= 4096),
// the largest value at which it holds becomes the dim's bound.
#include <fmt/format.h>

#include <set>

#include "onnx/importer.h"
#include "sym/evaluate.h"

namespace weft::onnx_import {
namespace {

void collect_vars(const SymExpr& e, std::set<std::string>& names,
                  std::map<std::string, std::pair<int64_t, std::optional<int64_t>>>& bounds) {
  for (const SymTerm& t : e.terms())
    for (const SymFactor& f : t.factors) {
      if (f.atom->kind == SymAtomKind::var) {
        names.insert(f.atom->name);
        bounds[f.atom->name] = {f.atom->lo, f.atom->hi};
      }
      for (const SymExpr& a : f.atom->args) collect_vars(a, names, bounds);
    }
}

// Whether `c` holds with `var` = x; false where a side cannot be evaluated.
bool holds_at(const SymCondition& c, const std::string& var, int64_t x) {
  SymBinding b{{var, x}};
  SymEvalResult l = try_evaluate(c.lhs, b), r = try_evaluate(c.rhs, b);
  if (!l.value || !r.value) return false;
  switch (c.rel) {
    case SymRel::eq:
      return *l.value == *r.value;
    case SymRel::le:
      return *l.value <= *r.value;
    case SymRel::lt:
      return *l.value < *r.value;
  }
  return false;
}

}  // namespace

void Importer::refuted(const RefutedRequirement& e) {
  refuted_ = e;
  fail(e.message());
}

std::optional<Importer::Narrowing> Importer::narrowing() const {
  if (!refuted_) return std::nullopt;
  const SymCondition& c = refuted_->condition();
  // Only an upper limit can be met by a lower bound: `seq <= 64`, `2 * seq + 1 < 130`.
  if (c.rel == SymRel::eq) return std::nullopt;
  std::set<std::string> names;
  std::map<std::string, std::pair<int64_t, std::optional<int64_t>>> bounds;
  collect_vars(c.lhs, names, bounds);
  collect_vars(c.rhs, names, bounds);
  if (names.size() != 1) return std::nullopt;
  const std::string& var = *names.begin();
  auto dv = dim_vars_.find(var);
  if (dv == dim_vars_.end()) return std::nullopt;
  auto [lo, hi] = bounds.at(var);
  if (!hi || !holds_at(c, var, lo) || holds_at(c, var, *hi)) return std::nullopt;
  // The largest x with the requirement true, by bisection: the requirements of shape rules are
  // monotone in one dim (a size against a fixed extent); the prover checks the new bound when the
  // model is imported again, so a wrong guess is an error, never a wrong model.
  int64_t good = lo, bad = *hi;
  while (bad - good > 1) {
    int64_t mid = good + (bad - good) / 2;
    (holds_at(c, var, mid) ? good : bad) = mid;
  }
  Narrowing n;
  n.sym = var;
  n.dim = dv->second.dim;
  n.value = good;
  n.was = *hi;
  n.user_bound = dv->second.from != BoundFrom::default_bound;
  n.from_inputs = dv->second.from == BoundFrom::input_shape;
  n.where = refuted_->loc();
  n.expects = refuted_->expects();
  return n;
}

}  // namespace weft::onnx_import
