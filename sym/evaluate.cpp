// Exact int64 evaluation of normal forms: checked arithmetic, bounds and divisor checks.
#include "sym/evaluate.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace weft {
namespace {

// Sets `error` at the first failure and stops; values after a failure are meaningless.
class Evaluator {
 public:
  explicit Evaluator(const SymBinding& binding) : binding_(binding) {}

  bool expr(const SymExpr& e, int64_t& out) {
    int64_t sum = e.constant();
    for (const SymTerm& t : e.terms()) {
      int64_t product = t.coeff;
      for (const SymFactor& f : t.factors) {
        int64_t a;
        if (!atom(*f.atom, a)) return false;
        for (int i = 0; i < f.exponent; ++i)
          if (__builtin_mul_overflow(product, a, &product)) return overflow(e);
      }
      if (__builtin_add_overflow(sum, product, &sum)) return overflow(e);
    }
    out = sum;
    return true;
  }

  std::string error;

 private:
  bool overflow(const SymExpr& e) {
    error = fmt::format("integer overflow evaluating {} at {}", e.str(), binding_str(binding_));
    return false;
  }

  bool atom(const SymAtom& a, int64_t& out) {
    switch (a.kind) {
      case SymAtomKind::var: {
        auto it = binding_.find(a.name);
        if (it == binding_.end()) {
          error = fmt::format("no value for symbolic variable '{}'", a.name);
          return false;
        }
        if (it->second < a.lo || (a.hi && it->second > *a.hi)) {
          error = fmt::format(
              "symbolic variable '{}' = {} is outside its bounds {}", a.name, it->second,
              a.hi ? fmt::format("[{}, {}]", a.lo, *a.hi) : fmt::format("[{}, inf)", a.lo));
          return false;
        }
        out = it->second;
        return true;
      }
      case SymAtomKind::floordiv:
      case SymAtomKind::mod: {
        int64_t p, d;
        if (!expr(a.args[0], p) || !expr(a.args[1], d)) return false;
        if (d <= 0) {
          error = fmt::format("divisor {} of {} is {} at {}; it must be positive", a.args[1].str(),
                              a.str(), d, binding_str(binding_));
          return false;
        }
        if (a.kind == SymAtomKind::floordiv) {
          out = floor_div_int(p, d);
        } else {
          out = p % d;  // in (-d, d): adding d cannot overflow
          if (out < 0) out += d;
        }
        return true;
      }
      case SymAtomKind::min:
      case SymAtomKind::max: {
        for (size_t i = 0; i < a.args.size(); ++i) {
          int64_t v;
          if (!expr(a.args[i], v)) return false;
          out = i == 0 ? v : (a.kind == SymAtomKind::min ? std::min(out, v) : std::max(out, v));
        }
        return true;
      }
    }
    return false;
  }

  const SymBinding& binding_;
};

}  // namespace

std::string binding_str(const SymBinding& binding) {
  std::string out;
  for (const auto& [name, value] : binding) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{}={}", name, value);
  }
  return out.empty() ? "the empty binding" : out;
}

SymEvalResult try_evaluate(const SymExpr& e, const SymBinding& binding) {
  Evaluator ev(binding);
  int64_t v;
  if (!ev.expr(e, v)) return {std::nullopt, std::move(ev.error)};
  return {v, ""};
}

int64_t evaluate(const SymExpr& e, const SymBinding& binding) {
  SymEvalResult r = try_evaluate(e, binding);
  if (!r.value) throw UserError(r.error);
  return *r.value;
}

}  // namespace weft
