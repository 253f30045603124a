// Whole-expression rewrites: a bottom-up rebuild through the normalizing constructors.
#include "sym/rewrite.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "core/error.h"
#include "sym/interval.h"

namespace weft {
namespace {

using AtomFn = std::function<SymExpr(const SymAtomRef&, std::vector<SymExpr>)>;

// Rebuilds e; `rebuild` receives each atom with its already rebuilt arguments.
class Rebuilder {
 public:
  explicit Rebuilder(const AtomFn& rebuild) : rebuild_(rebuild) {}

  SymExpr expr(const SymExpr& e) {
    SymExpr out = e.constant();
    for (const SymTerm& t : e.terms()) {
      SymExpr product = t.coeff;
      for (const SymFactor& f : t.factors) {
        SymExpr a = atom(f.atom);
        for (int i = 0; i < f.exponent; ++i) product = product * a;
      }
      out = out + product;
    }
    return out;
  }

 private:
  SymExpr atom(const SymAtomRef& ref) {
    auto it = memo_.find(ref.get());
    if (it != memo_.end()) return it->second;
    std::vector<SymExpr> args;
    args.reserve(ref->args.size());
    for (const SymExpr& a : ref->args) args.push_back(expr(a));
    SymExpr out = rebuild_(ref, std::move(args));
    memo_.emplace(ref.get(), out);
    return out;
  }

  const AtomFn& rebuild_;
  std::unordered_map<const SymAtom*, SymExpr> memo_;  // lookups only: order never matters
};

// The normalizing constructor of an application.
SymExpr apply(SymAtomKind kind, std::vector<SymExpr> args) {
  switch (kind) {
    case SymAtomKind::floordiv:
      return floordiv(args[0], args[1]);
    case SymAtomKind::mod:
      return floormod(args[0], args[1]);
    case SymAtomKind::min:
      return SymExpr::min_of(std::move(args));
    case SymAtomKind::max:
      return SymExpr::max_of(std::move(args));
    case SymAtomKind::var:
      break;
  }
  WEFT_CHECK(false, "variables have no arguments");
  return 0;
}

void visit_atoms(const SymExpr& e, const std::function<void(const SymAtomRef&)>& fn) {
  for (const SymTerm& t : e.terms()) {
    for (const SymFactor& f : t.factors) {
      fn(f.atom);
      for (const SymExpr& a : f.atom->args) visit_atoms(a, fn);
    }
  }
}

}  // namespace

SymExpr map_variables(const SymExpr& e, const std::function<SymExpr(const SymVar&)>& on_var) {
  AtomFn fn = [&](const SymAtomRef& ref, std::vector<SymExpr> args) {
    if (ref->kind == SymAtomKind::var) return on_var(SymVar(ref));
    return apply(ref->kind, std::move(args));
  };
  return Rebuilder(fn).expr(e);
}

SymExpr substitute(const SymExpr& e, const SymSubstitution& values) {
  return map_variables(e, [&](const SymVar& v) -> SymExpr {
    auto it = values.find(v.name());
    if (it == values.end()) return v;
    auto c = it->second.as_constant();
    if (c && (*c < v.lo() || (v.hi() && *c > *v.hi())))
      WEFT_USER_ERROR(
          SourceLoc{}, "cannot substitute {} for symbolic variable '{}': outside {}", *c, v.name(),
          v.hi() ? fmt::format("[{}, {}]", v.lo(), *v.hi()) : fmt::format("[{}, inf)", v.lo()));
    return it->second;
  });
}

SymExpr expand_mod(const SymExpr& e) {
  AtomFn fn = [](const SymAtomRef& ref, std::vector<SymExpr> args) {
    if (ref->kind == SymAtomKind::var) return SymExpr::from_atom(ref);
    if (ref->kind == SymAtomKind::mod) return args[0] - args[1] * floordiv(args[0], args[1]);
    return apply(ref->kind, std::move(args));
  };
  return Rebuilder(fn).expr(e);
}

std::vector<SymVar> sym_variables(const SymExpr& e) {
  std::vector<SymVar> vars;
  visit_atoms(e, [&](const SymAtomRef& a) {
    if (a->kind != SymAtomKind::var) return;
    for (const SymVar& v : vars)
      if (v.name() == a->name) return;
    vars.push_back(SymVar(a));
  });
  std::sort(vars.begin(), vars.end(),
            [](const SymVar& x, const SymVar& y) { return x.name() < y.name(); });
  return vars;
}

std::vector<SymExpr> sym_divisors(const SymExpr& e) {
  std::vector<SymExpr> out;
  visit_atoms(e, [&](const SymAtomRef& a) {
    if (a->kind == SymAtomKind::floordiv || a->kind == SymAtomKind::mod) out.push_back(a->args[1]);
  });
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool sym_always_defined(const SymExpr& e) {
  for (const SymExpr& d : sym_divisors(e))
    if (natural_range(d).lo < 1) return false;
  return true;
}

}  // namespace weft
