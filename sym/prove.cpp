// The proof procedure: normal form, intervals, sampled counterexamples, Z3 (cached).
#include "sym/prove.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "sym/interval.h"
#include "sym/normal_form.h"
#include "sym/rewrite.h"

namespace weft {
namespace {

enum class Cheap { holds, fails, unknown };

struct CheapVerdict {
  Cheap verdict = Cheap::unknown;
  SymMethod method = SymMethod::none;
};

Cheap decide_constant(int64_t value, bool equality) {
  return (equality ? value == 0 : value >= 0) ? Cheap::holds : Cheap::fails;
}

bool has_mod(const SymExpr& e) {
  for (const SymTerm& t : e.terms())
    for (const SymFactor& f : t.factors)
      if (f.atom->kind == SymAtomKind::mod) return true;
  return false;
}

// Each floordiv(P, c) and mod(P, c) with a constant divisor at the top of d is replaced by
// (P - r) / c and r, for a fresh variable r in [0, c - 1] (one per (P, c)); the result is
// multiplied by the divisors' lcm L to stay integral. At every binding where d is defined, r =
// mod(P, c) makes the relaxation equal L * d exactly, so its bounds (over every r, a larger set)
// bound L * d. Returns nullopt when d has no such atom, a term holds two of the quotients, or
// L exceeds 2^24.
std::optional<SymExpr> relax_divisions(const SymExpr& d, int64_t& lcm) {
  std::vector<std::pair<SymExpr, int64_t>> divisions;  // (P, c) in first-seen order
  lcm = 1;
  for (const SymTerm& t : d.terms()) {
    for (const SymFactor& f : t.factors) {
      const SymAtom& a = *f.atom;
      if ((a.kind != SymAtomKind::floordiv && a.kind != SymAtomKind::mod) ||
          !a.args[1].is_constant())
        continue;
      int64_t c = a.args[1].constant();
      std::pair<SymExpr, int64_t> key{a.args[0], c};
      if (std::find(divisions.begin(), divisions.end(), key) == divisions.end())
        divisions.push_back(key);
      int64_t next = std::lcm(lcm, c);
      if (next > (int64_t{1} << 24)) return std::nullopt;  // keeps the scaled terms small
      lcm = next;
    }
  }
  if (divisions.empty()) return std::nullopt;
  std::vector<SymVar> remainders;
  for (size_t i = 0; i < divisions.size(); ++i)
    remainders.push_back(
        sym_detail::hidden_var("%r" + std::to_string(i), 0, divisions[i].second - 1));
  auto remainder_of = [&](const SymAtom& a) -> const SymVar* {
    if ((a.kind != SymAtomKind::floordiv && a.kind != SymAtomKind::mod) || !a.args[1].is_constant())
      return nullptr;
    std::pair<SymExpr, int64_t> key{a.args[0], a.args[1].constant()};
    auto it = std::find(divisions.begin(), divisions.end(), key);
    return &remainders[static_cast<size_t>(it - divisions.begin())];
  };
  SymExpr total = sym_detail::checked_mul(d.constant(), lcm, "relaxation");
  for (const SymTerm& t : d.terms()) {
    int64_t k = sym_detail::checked_mul(t.coeff, lcm, "relaxation");
    SymExpr product = 1;
    bool quotient_seen = false;
    for (const SymFactor& f : t.factors) {
      const SymAtom& a = *f.atom;
      const SymVar* r = remainder_of(a);
      SymExpr base = r ? SymExpr(*r) : SymExpr::from_atom(f.atom);
      if (r && a.kind == SymAtomKind::floordiv) {
        if (quotient_seen || f.exponent != 1) return std::nullopt;
        quotient_seen = true;
        int64_t c = a.args[1].constant();
        k /= c;  // lcm is a multiple of c
        base = a.args[0] - *r;
      }
      for (int i = 0; i < f.exponent; ++i) product = product * base;
    }
    total = total + sym_detail::scale(product, k);
  }
  return total;
}

// The claim is d == 0 (equality) or d >= 0: decided from d's normal form, else its bounds.
CheapVerdict decide_cheaply(const SymExpr& d, bool equality) {
  if (auto k = d.as_constant()) return {decide_constant(*k, equality), SymMethod::normal_form};
  // g * S + k with g not dividing k is never 0.
  if (equality && d.constant() % sym_detail::terms_content(d) != 0)
    return {Cheap::fails, SymMethod::normal_form};
  if (has_mod(d)) {
    try {
      if (auto k = expand_mod(d).as_constant())
        return {decide_constant(*k, equality), SymMethod::normal_form};
    } catch (const UserError&) {
      // expanding overflowed int64: no conclusion from this step
    }
  }
  SymRange r = bounds(d);
  if (equality) {
    if (r.is_point() && r.lo == 0) return {Cheap::holds, SymMethod::interval};
    if (r.lo > 0 || r.hi < 0) return {Cheap::fails, SymMethod::interval};
  } else {
    if (r.lo >= 0) return {Cheap::holds, SymMethod::interval};
    if (r.hi < 0) return {Cheap::fails, SymMethod::interval};
  }
  // Bounds of L * d through remainder variables; d is an integer, so L * d > -L means d >= 0.
  int64_t lcm = 1;
  std::optional<SymExpr> relaxed;
  try {
    relaxed = relax_divisions(d, lcm);
  } catch (const UserError&) {
    relaxed.reset();  // the scaled terms overflow int64: no conclusion from this step
  }
  if (relaxed) {
    SymRange q = bounds(*relaxed);
    bool above = q.lo > -lcm;  // d >= 0
    bool below = q.hi < lcm;   // d <= 0
    if (equality) {
      if (above && below) return {Cheap::holds, SymMethod::interval};
      if (q.lo >= lcm || q.hi <= -lcm) return {Cheap::fails, SymMethod::interval};
    } else {
      if (above) return {Cheap::holds, SymMethod::interval};
      if (q.hi < 0) return {Cheap::fails, SymMethod::interval};
    }
  }
  return {};
}

// Both sides evaluate at `binding` and the condition is false there.
bool violated_at(const SymCondition& c, const SymBinding& binding) {
  SymEvalResult l = try_evaluate(c.lhs, binding);
  SymEvalResult r = try_evaluate(c.rhs, binding);
  if (!l.value || !r.value) return false;
  switch (c.rel) {
    case SymRel::eq:
      return *l.value != *r.value;
    case SymRel::le:
      return *l.value > *r.value;
    case SymRel::lt:
      return *l.value >= *r.value;
  }
  return false;
}

uint64_t splitmix(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::vector<SymVar> condition_variables(const SymCondition& c) {
  std::vector<SymVar> vars = sym_variables(c.lhs);
  for (const SymVar& v : sym_variables(c.rhs)) {
    bool seen = std::any_of(vars.begin(), vars.end(),
                            [&](const SymVar& w) { return w.name() == v.name(); });
    if (!seen) vars.push_back(v);
  }
  return vars;
}

SymExpr claim_difference(const SymCondition& c) {
  SymExpr d = c.rhs - c.lhs;
  return c.rel == SymRel::lt ? d - 1 : d;
}

}  // namespace

const char* sym_rel_symbol(SymRel rel) {
  switch (rel) {
    case SymRel::eq:
      return "==";
    case SymRel::le:
      return "<=";
    case SymRel::lt:
      return "<";
  }
  return "?";
}

const char* sym_truth_name(SymTruth truth) {
  switch (truth) {
    case SymTruth::proven_true:
      return "proven true";
    case SymTruth::proven_false:
      return "proven false";
    case SymTruth::unknown:
      return "unknown";
  }
  return "?";
}

const char* sym_method_name(SymMethod method) {
  switch (method) {
    case SymMethod::normal_form:
      return "normal form";
    case SymMethod::interval:
      return "interval";
    case SymMethod::sampling:
      return "sampling";
    case SymMethod::z3:
      return "z3";
    case SymMethod::none:
      return "none";
  }
  return "?";
}

std::string SymCondition::str() const {
  return fmt::format("{} {} {}", lhs.str(), sym_rel_symbol(rel), rhs.str());
}

bool SymCondition::holds(const SymBinding& binding) const {
  int64_t l = evaluate(lhs, binding);
  int64_t r = evaluate(rhs, binding);
  switch (rel) {
    case SymRel::eq:
      return l == r;
    case SymRel::le:
      return l <= r;
    case SymRel::lt:
      return l < r;
  }
  return false;
}

SymCondition SymCondition::reduced() const {
  // The claim as d == 0 or d >= 0.
  SymExpr d = claim_difference(*this);
  bool equality = rel == SymRel::eq;
  if (!d.is_constant()) {
    int64_t g = sym_detail::terms_content(d);
    if (equality && d.constant() % g == 0) {
      d = sym_detail::divide_exact(d, g);
    } else if (!equality) {
      // g * S + k >= 0  <=>  S + floor(k / g) >= 0
      int64_t k = d.constant();
      SymExpr s = sym_detail::divide_exact(d - k, g);
      d = s + floor_div_int(k, g);
    }
  }
  // Split by sign: negative part on the left, positive part on the right.
  std::vector<SymTerm> positive, negative;
  for (const SymTerm& t : d.terms()) {
    if (t.coeff > 0)
      positive.push_back(t);
    else
      negative.push_back({-t.coeff, t.factors});
  }
  int64_t k = d.constant();
  SymCondition out;
  out.rel = equality ? SymRel::eq : SymRel::le;
  out.lhs = SymExpr::sum_of_terms(k < 0 ? -k : 0, std::move(negative));
  out.rhs = SymExpr::sum_of_terms(k > 0 ? k : 0, std::move(positive));
  return out;
}

size_t SymProver::Z3KeyHash::operator()(const Z3Key& k) const {
  size_t h = k.d.hash() * 31 + (k.equality ? 1 : 2);
  for (const SymExpr& e : k.defined) h = h * 1000003u ^ e.hash();
  return h;
}

SymProver::SymProver(SymProverOptions options) : options_(std::move(options)) {}

SymProof SymProver::finish(SymProof proof) {
  if (proof.truth == SymTruth::unknown) {
    ++unknown_;
    return proof;
  }
  switch (proof.method) {
    case SymMethod::normal_form:
      ++by_normal_form_;
      break;
    case SymMethod::interval:
      ++by_interval_;
      break;
    case SymMethod::sampling:
      ++by_sampling_;
      break;
    case SymMethod::z3:
      ++by_z3_;
      break;
    case SymMethod::none:
      break;
  }
  return proof;
}

std::optional<SymBinding> SymProver::find_counterexample(const SymCondition& c) const {
  std::vector<SymVar> vars = condition_variables(c);
  // Seeded by the condition itself, so a query always tries the same bindings.
  uint64_t state =
      c.lhs.hash() * 0x9E3779B97F4A7C15ull ^ c.rhs.hash() ^ static_cast<uint64_t>(c.rel);
  static constexpr int64_t kSpans[] = {1, 3, 15, 255, 65535};
  for (int sample = 0; sample < options_.samples; ++sample) {
    SymBinding binding;
    for (const SymVar& v : vars) {
      int64_t lo = v.lo();
      int64_t hi = v.hi().value_or(lo + 65535);  // bounds are within 2^62: no overflow
      int64_t value;
      switch (sample) {
        case 0:
          value = lo;
          break;
        case 1:
          value = std::min(lo + 1, hi);
          break;
        case 2:
          value = v.hi() ? hi : std::min(lo + 1024, hi);
          break;
        default: {
          uint64_t r = splitmix(state);
          int64_t span = kSpans[r % 5];
          if ((r >> 8) % 4 == 0) {
            value = (r >> 12) % 2 ? lo : hi;
          } else {
            __int128 room = static_cast<__int128>(hi) - lo;  // up to 2^63: kept in 128 bits
            uint64_t width = static_cast<uint64_t>(std::min<__int128>(span, room)) + 1;
            value = lo + static_cast<int64_t>((r >> 16) % width);
          }
        }
      }
      binding[v.name()] = value;
    }
    if (violated_at(c, binding)) return binding;
    if (vars.empty()) break;
  }
  return std::nullopt;
}

SymZ3Answer SymProver::decide_with_z3(const Z3Key& key) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = z3_cache_.find(key);
    if (it != z3_cache_.end()) {
      ++z3_cache_hits_;
      return it->second;
    }
  }
  ++z3_calls_;
  SymZ3Answer answer = z3_decide(key.d, key.equality, key.defined, options_.z3);
  std::lock_guard<std::mutex> lock(mu_);
  if (z3_cache_.size() >= options_.cache_capacity) z3_cache_.clear();
  z3_cache_.emplace(key, answer);
  return answer;
}

size_t SymProver::ProofKeyHash::operator()(const ProofKey& k) const {
  return (k.lhs.hash() * 0x9E3779B97F4A7C15ull ^ k.rhs.hash()) + static_cast<size_t>(k.rel);
}

SymProof SymProver::prove(const SymCondition& c) {
  ++queries_;
  SymExpr d;
  try {
    d = claim_difference(c);
  } catch (const UserError& e) {
    return finish({SymTruth::unknown, SymMethod::none, std::nullopt, e.message()});
  }
  // A constant difference is decided at once; anything else may take a while, so it is cached.
  if (d.is_constant()) return finish(prove_uncached(c, d));
  ProofKey key{c.rel, c.lhs, c.rhs};
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = proof_cache_.find(key);
    if (it != proof_cache_.end()) {
      ++proof_cache_hits_;
      return finish(it->second);
    }
  }
  SymProof proof = prove_uncached(c, d);
  std::lock_guard<std::mutex> lock(mu_);
  if (proof_cache_.size() >= options_.cache_capacity) proof_cache_.clear();
  proof_cache_.emplace(std::move(key), proof);
  return finish(std::move(proof));
}

SymProof SymProver::prove_uncached(const SymCondition& c, const SymExpr& d) {
  bool equality = c.rel == SymRel::eq;
  CheapVerdict cheap = decide_cheaply(d, equality);
  if (cheap.verdict == Cheap::holds) return {SymTruth::proven_true, cheap.method, {}, ""};
  // Disproofs always carry a confirmed counterexample; a cheap "fails" only says one exists.
  if (auto cex = find_counterexample(c)) {
    SymMethod method = cheap.verdict == Cheap::fails ? cheap.method : SymMethod::sampling;
    return {SymTruth::proven_false, method, std::move(cex), ""};
  }
  if (!options_.use_z3)
    return {SymTruth::unknown, SymMethod::none, std::nullopt, "not decided without Z3"};

  Z3Key key{equality, d, sym_divisors(c.lhs)};
  for (const SymExpr& divisor : sym_divisors(c.rhs)) key.defined.push_back(divisor);
  std::sort(key.defined.begin(), key.defined.end());
  key.defined.erase(std::unique(key.defined.begin(), key.defined.end()), key.defined.end());
  SymZ3Answer answer = decide_with_z3(key);
  switch (answer.verdict) {
    case SymZ3Verdict::holds:
      return {SymTruth::proven_true, SymMethod::z3, {}, ""};
    case SymZ3Verdict::fails:
      if (answer.model) {
        // Variables that cancelled out of the query are free: any value in bounds will do.
        for (const SymVar& v : condition_variables(c)) answer.model->emplace(v.name(), v.lo());
        if (violated_at(c, *answer.model))
          return {SymTruth::proven_false, SymMethod::z3, answer.model, ""};
      }
      return {SymTruth::unknown, SymMethod::none, std::nullopt,
              "Z3 found a counterexample that does not fit int64 evaluation"};
    case SymZ3Verdict::unknown:
      break;
  }
  return {SymTruth::unknown, SymMethod::none, std::nullopt, "Z3: " + answer.reason};
}

SymObligation SymProver::require(const SymCondition& c) {
  SymObligation out;
  out.proof = prove(c);
  if (out.proof.truth == SymTruth::unknown) out.runtime_check = c.reduced();
  return out;
}

SymProverStats SymProver::stats() const {
  SymProverStats s;
  s.queries = queries_.load();
  s.by_normal_form = by_normal_form_.load();
  s.by_interval = by_interval_.load();
  s.by_sampling = by_sampling_.load();
  s.by_z3 = by_z3_.load();
  s.unknown = unknown_.load();
  s.z3_calls = z3_calls_.load();
  s.z3_cache_hits = z3_cache_hits_.load();
  s.proof_cache_hits = proof_cache_hits_.load();
  return s;
}

}  // namespace weft
