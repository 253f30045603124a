// Repeated finite-field tests with a computed bound, output matching and the float check.
#include "verify/equivalence.h"

#include <fmt/format.h>

#include "verify/error_bound.h"

namespace weft {

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::equivalent:
      return "equivalent";
    case Verdict::not_equivalent:
      return "not equivalent";
    case Verdict::outside_lax:
      return "outside the Lax fragment";
    case Verdict::error:
      return "error";
    case Verdict::abandoned:
      return "abandoned at the time budget";
  }
  return "?";
}

namespace {
std::string program_name(const Graph& g, const char* fallback) {
  return g.name.empty() ? fallback : fmt::format("'{}'", g.name);
}
}  // namespace

void check_signatures(const Graph& a, const Graph& b) {
  if (a.level != Level::kernel || b.level != Level::kernel)
    throw UserError("only kernel graphs (whole programs) can be compared");
  if (a.inputs.size() != b.inputs.size())
    throw UserError(b.loc, fmt::format("{} takes {} inputs but {} takes {}: programs must take "
                                       "the same inputs, matched by position",
                                       program_name(a, "the first program"), a.inputs.size(),
                                       program_name(b, "the second program"), b.inputs.size()));
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    const Value &va = a.value(a.inputs[i]), &vb = b.value(b.inputs[i]);
    if (va.type != vb.type)
      throw UserError(vb.loc, fmt::format("input {} is {} '{}' in one program but {} '{}' in the "
                                          "other",
                                          i + 1, va.type.str(), va.name, vb.type.str(), vb.name));
  }
  if (a.outputs.size() != b.outputs.size())
    throw UserError(b.loc, fmt::format("{} has {} outputs but {} has {}: outputs are matched by "
                                       "position",
                                       program_name(a, "the first program"), a.outputs.size(),
                                       program_name(b, "the second program"), b.outputs.size()));
  for (size_t i = 0; i < a.outputs.size(); ++i) {
    const Value &va = a.value(a.outputs[i]), &vb = b.value(b.outputs[i]);
    if (va.type != vb.type)
      throw UserError(vb.loc, fmt::format("output {} is {} '{}' in one program but {} '{}' in the "
                                          "other",
                                          i, va.type.str(), va.name, vb.type.str(), vb.name));
  }
}

EquivalenceChecker::EquivalenceChecker(Graph target, VerifyOptions options,
                                       std::shared_ptr<FingerprintCache> cache)
    : target_(std::move(target)),
      options_(options),
      cache_(cache ? std::move(cache) : std::make_shared<FingerprintCache>()) {}

template <class V>
VerifyResult EquivalenceChecker::run_tests(const Graph& candidate, VerifyResult r,
                                           std::chrono::steady_clock::time_point give_up_at) const {
  using Clock = std::chrono::steady_clock;
  int attempt = 0;
  Clock::duration last_test{0};  // tests of one candidate cost about the same
  for (int t = 0; t < r.tests_needed; ++t) {
    for (;;) {
      const Clock::time_point started = Clock::now();
      if (started >= give_up_at || give_up_at - started < last_test) {
        r.verdict = Verdict::abandoned;
        return r;
      }
      FieldDomain<V> domain(FieldTestParams::draw(test_seed(t, attempt), options_.threads));
      domain.set_give_up_at(give_up_at);
      std::vector<Tensor<V>> fa, fb;
      const Graph* current = &target_;
      try {
        fa = field_fingerprints<V>(target_, domain, cache_.get(), /*keep_outputs=*/true);
        current = &candidate;
        fb = field_fingerprints<V>(candidate, domain, cache_.get());
      } catch (const EvaluationAbandoned&) {
        r.verdict = Verdict::abandoned;
        return r;
      } catch (const ZeroDivisorError&) {
        ++r.tests_discarded;
        ++attempt;
        if (r.tests_discarded > options_.max_discards) {
          r.verdict = Verdict::error;
          r.message = fmt::format(
              "every test hit a division by zero ({} draws): a divisor is "
              "probably identically zero",
              r.tests_discarded);
          return r;
        }
        continue;
      } catch (const OutsideLaxError&) {
        r.verdict = Verdict::outside_lax;
        r.message = fmt::format(
            "{} applies exp to a value that already depends on an exp, which the "
            "finite-field test cannot decide",
            program_name(*current,
                         current == &target_ ? "the first program" : "the second program"));
        return r;
      }
      ++r.tests_run;
      last_test = Clock::now() - started;
      for (size_t o = 0; o < fa.size(); ++o) {
        const auto& x = fa[o].data;
        const auto& y = fb[o].data;
        WEFT_CHECK(x.size() == y.size(), "output {} sizes {} vs {}", o, x.size(), y.size());
        for (size_t e = 0; e < x.size(); ++e)
          if (x[e].p != y[e].p) {
            r.verdict = Verdict::not_equivalent;
            r.output = static_cast<int>(o);
            r.element.assign(fa[o].shape.size(), 0);
            auto rem = static_cast<int64_t>(e);
            for (int d = static_cast<int>(fa[o].shape.size()) - 1; d >= 0; --d) {
              r.element[d] = rem % fa[o].shape[d];
              rem /= fa[o].shape[d];
            }
            return r;
          }
      }
      break;
    }
  }
  r.verdict = Verdict::equivalent;
  r.bound = std::pow(r.per_test_bound, r.tests_run);
  return r;
}

VerifyResult EquivalenceChecker::check(const Graph& candidate,
                                       std::chrono::steady_clock::time_point give_up_at) const {
  check_signatures(target_, candidate);
  VerifyResult r;
  r.per_test_bound = per_test_bound(degree_stats(target_), degree_stats(candidate));
  r.tests_needed = weft::tests_needed(r.per_test_bound, options_.target_error);
  if (uses_exp(target_) || uses_exp(candidate))
    r = run_tests<FieldPQ>(candidate, r, give_up_at);
  else
    r = run_tests<FieldP>(candidate, r, give_up_at);
  if (r.verdict == Verdict::equivalent && std::chrono::steady_clock::now() >= give_up_at)
    r.verdict = Verdict::abandoned;
  if (options_.float_check && r.verdict != Verdict::error && r.verdict != Verdict::abandoned) {
    try {
      r.floats = float_check(float_ref(), candidate, GiveUpAt{give_up_at});
    } catch (const EvaluationAbandoned&) {
      r.verdict = Verdict::abandoned;
    }
  }
  return r;
}

uint64_t EquivalenceChecker::test_seed(int test, int attempt) const {
  return ff::mix64(options_.seed, static_cast<uint64_t>(test), static_cast<uint64_t>(attempt));
}

int EquivalenceChecker::tests_needed(const Graph& candidate) const {
  return weft::tests_needed(per_test_bound(degree_stats(target_), degree_stats(candidate)),
                            options_.target_error);
}

int EquivalenceChecker::prepare() const {
  int tests = 1;
  try {
    tests = tests_needed(target_);
  } catch (const UserError&) {
    return tests;  // too large for the test: every check() reports the limit at once
  }
  auto first_test = [&](auto value) {
    using V = decltype(value);
    FieldDomain<V> domain(FieldTestParams::draw(test_seed(0, 0), options_.threads));
    field_fingerprints<V>(target_, domain, cache_.get(), /*keep_outputs=*/true);
  };
  try {
    if (uses_exp(target_))
      first_test(FieldPQ{});
    else
      first_test(FieldP{});
  } catch (const ZeroDivisorError&) {
  } catch (const OutsideLaxError&) {
  } catch (const UserError&) {
  }
  try {
    if (options_.float_check) float_ref();
  } catch (const UserError&) {
  }
  return tests;
}

const FloatReference& EquivalenceChecker::float_ref() const {
  std::call_once(float_ref_->once, [&] {
    float_ref_->value = float_reference(target_, ff::mix64(options_.seed, 0x666c6f6174ULL));
  });
  return float_ref_->value;
}

VerifyResult verify_equivalent(const Graph& a, const Graph& b, const VerifyOptions& options) {
  return EquivalenceChecker(a, options).check(b);
}

}  // namespace weft
