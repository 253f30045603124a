// Tests of the proof procedure: each stage decides what it should, disproofs carry confirmed
// counterexamples, unknowns become run-time checks, Z3 answers are cached, and one prover serves
// many threads.
#include <gtest/gtest.h>

#include "core/parallel.h"
#include "sym/interval.h"
#include "sym/parse.h"
#include "sym/prove.h"
#include "tests/sym_test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");
WEFT_TEST_TIERS_OF("SymConcurrency.*", "tsan");
WEFT_TEST_TIERS_OF("SymProve.*", "tsan");

namespace weft {
namespace {

using test::sx;

SymCondition cond(const std::string& lhs, SymRel rel, const std::string& rhs) {
  return {rel, sx(lhs), sx(rhs)};
}

// One claim and the answer it must get.
struct Expected {
  std::string lhs;
  SymRel rel;
  std::string rhs;
  SymTruth truth;
  SymMethod method;
};

// Proves each claim with one prover; disproofs must carry a counterexample that refutes them.
void expect_proofs(SymProver& prover, const std::vector<Expected>& cases) {
  for (const Expected& e : cases) {
    SymCondition c = cond(e.lhs, e.rel, e.rhs);
    SymProof p = prover.prove(c);
    EXPECT_EQ(p.truth, e.truth) << c.str() << ": " << sym_truth_name(p.truth) << " (" << p.note
                                << ")";
    EXPECT_EQ(p.method, e.method) << c.str() << ": " << sym_method_name(p.method);
    if (p.truth == SymTruth::proven_false) {
      ASSERT_TRUE(p.counterexample) << c.str();
      EXPECT_FALSE(c.holds(*p.counterexample))
          << c.str() << " at " << binding_str(*p.counterexample);
    } else {
      EXPECT_FALSE(p.counterexample) << c.str();
    }
  }
}

constexpr SymRel kEq = SymRel::eq, kLe = SymRel::le, kLt = SymRel::lt;
constexpr SymTruth kTrue = SymTruth::proven_true, kFalse = SymTruth::proven_false;

TEST(SymProve, NormalFormDecidesEqualForms) {
  SymProver prover;
  expect_proofs(
      prover,
      {
          {"floordiv(4 * n, 2)", kEq, "2 * n", kTrue, SymMethod::normal_form},
          {"n + 3", kLt, "n + 4", kTrue, SymMethod::normal_form},
          // mod expanded to a - b * floordiv(a, b):
          {"4 * floordiv(s, 4) + mod(s, 4)", kEq, "s", kTrue, SymMethod::normal_form},
          {"mod(s, 8)", kEq, "mod(s, 4) + 4 * mod(floordiv(s, 4), 2)", kTrue,
           SymMethod::normal_form},
          {"floordiv(s - mod(s, 4), 4)", kEq, "floordiv(s, 4)", kTrue, SymMethod::normal_form},
          // 2n - 2m - 1 is odd, never 0:
          {"2 * n", kEq, "2 * m + 1", kFalse, SymMethod::normal_form},
          {"n + 4", kLe, "n + 3", kFalse, SymMethod::normal_form},
      });
}

TEST(SymProve, IntervalsDecideBoundedClaims) {
  SymProver prover;
  expect_proofs(prover, {
                            {"n", kLe, "n * m", kTrue, SymMethod::interval},
                            {"mod(s, 8)", kLt, "8", kTrue, SymMethod::interval},
                            {"floordiv(n, 8)", kLe, "256", kTrue, SymMethod::interval},
                            {"n * n", kLe, "n * n * n", kTrue, SymMethod::interval},
                            {"m + 2048", kLe, "n", kFalse, SymMethod::interval},
                        });
}

TEST(SymProve, RemainderRelaxationDecidesRoundingClaims) {
  SymProver prover;
  expect_proofs(prover,
                {
                    {"floordiv(s + 3, 4)", kLe, "floordiv(s, 4) + 1", kTrue, SymMethod::interval},
                    {"s", kLe, "64 * floordiv(s + 63, 64)", kTrue, SymMethod::interval},
                    {"8 * floordiv(s, 8)", kLe, "s", kTrue, SymMethod::interval},
                    {"floordiv(s + 7, 8)", kLe, "floordiv(s, 8)", kFalse, SymMethod::sampling},
                });
}

TEST(SymProve, Z3DecidesWhatRemains) {
  SymProver prover;
  expect_proofs(prover,
                {
                    {"min(s, t) + max(s, t)", kEq, "s + t", kTrue, SymMethod::z3},
                    {"m * floordiv(n, m)", kLe, "n", kTrue, SymMethod::z3},
                    {"max(s, t) - min(s, t)", kEq, "max(s - t, t - s)", kTrue, SymMethod::z3},
                    // Only a large s tells these apart; sampling stays below it, Z3 finds it.
                    {"mod(s, 1000003)", kEq, "s", kFalse, SymMethod::z3},
                });
  EXPECT_EQ(prover.stats().z3_calls, 4);
}

TEST(SymProve, SamplingFindsCounterexamples) {
  SymProver prover;
  expect_proofs(prover, {
                            {"n", kEq, "m", kFalse, SymMethod::sampling},
                            {"m * floordiv(n, m)", kLt, "n", kFalse, SymMethod::sampling},
                        });
  EXPECT_EQ(prover.stats().z3_calls, 0);
}

TEST(SymProve, UndefinedBindingsAreNotCounterexamples) {
  // x in [-8, 8]: floordiv(s, x) is defined only where x >= 1, and there it is <= s.
  SymProver prover;
  expect_proofs(prover, {{"floordiv(s, x)", kLe, "s", kTrue, SymMethod::z3}});
}

TEST(SymProve, UnknownBecomesARuntimeCheck) {
  SymProverOptions options;
  options.z3.rlimit = 1000;  // far too little for a nonlinear claim
  SymProver prover(options);
  // u^3 - u = (u-1) u (u+1) is divisible by 6: true, but beyond every cheap method.
  SymObligation o = prover.require(cond("0", SymRel::eq, "mod(u * u * u - u, 6)"));
  EXPECT_EQ(o.proof.truth, SymTruth::unknown) << o.proof.note;
  EXPECT_NE(o.proof.note.find("Z3"), std::string::npos) << o.proof.note;
  ASSERT_TRUE(o.runtime_check);
  // (coefficients inside mod are reduced modulo the divisor: -u becomes 5 * u)
  EXPECT_EQ(o.runtime_check->str(), "0 == mod(u * u * u + 5 * u, 6)");
  EXPECT_TRUE(o.runtime_check->holds({{"u", 7}}));
  EXPECT_THROW(o.runtime_check->holds({{"u", 0}}), UserError);  // u >= 1
  EXPECT_THROW(o.runtime_check->holds({}), UserError);

  SymObligation proven = prover.require(cond("n", SymRel::le, "n + 1"));
  EXPECT_EQ(proven.proof.truth, SymTruth::proven_true);
  EXPECT_FALSE(proven.runtime_check);
}

TEST(SymProve, TheResourceLimitStopsNonlinearZ3Queries) {
  // Z3's default arithmetic solver loops here without counting its work; the legacy one used
  // by z3_decide stops at the resource limit. No wall-clock limit: only the rlimit can end it.
  SymZ3Options options;
  options.rlimit = 50000;
  options.timeout_ms = 0;
  SymZ3Answer a = z3_decide(sx("floordiv(s * s + 1, 3) - floordiv(s * s, 3)"), true, {}, options);
  EXPECT_EQ(a.verdict, SymZ3Verdict::unknown);
  EXPECT_EQ(a.reason, "canceled");
}

TEST(SymProve, ReducedConditionsAreEquivalentAndSimpler) {
  EXPECT_EQ(cond("2 * n + 4", SymRel::eq, "2 * m + 4").reduced().str(), "n == m");
  EXPECT_EQ(cond("2 * n + 1", SymRel::le, "2 * m + 4").reduced().str(), "n <= m + 1");
  EXPECT_EQ(cond("n", SymRel::lt, "m").reduced().str(), "n + 1 <= m");
  EXPECT_EQ(cond("3 * n + 2", SymRel::eq, "3 * m + 5").reduced().str(), "n == m + 1");
  EXPECT_EQ(cond("3 * n", SymRel::eq, "3 * m + 1").reduced().str(), "3 * n == 3 * m + 1");
  for (const SymCondition& c :
       {cond("2 * n + 1", SymRel::le, "2 * m + 4"), cond("n * m", SymRel::lt, "3 * n + 6")}) {
    SymCondition r = c.reduced();
    for (int64_t n = 1; n <= 40; ++n)
      for (int64_t m = 1; m <= 40; ++m)
        EXPECT_EQ(c.holds({{"n", n}, {"m", m}}), r.holds({{"n", n}, {"m", m}})) << c.str();
  }
}

TEST(SymProve, Z3AnswersAreCached) {
  SymProver prover;
  SymCondition c = cond("min(s, t) + max(s, t)", SymRel::eq, "s + t");
  EXPECT_EQ(prover.prove(c).truth, SymTruth::proven_true);
  // The same claim written differently has the same difference, so the same Z3 query.
  EXPECT_EQ(prover.prove(cond("min(s, t) + max(s, t) + 1", SymRel::eq, "s + t + 1")).truth,
            SymTruth::proven_true);
  SymProverStats st = prover.stats();
  EXPECT_EQ(st.z3_calls, 1);
  EXPECT_EQ(st.z3_cache_hits, 1);
  EXPECT_EQ(st.by_z3, 2);
  EXPECT_EQ(st.queries, 2);
  // The same condition again: the whole answer is reused, counterexample included.
  SymCondition wrong = cond("min(s, t) + max(s, t)", SymRel::eq, "s + t + floordiv(s, 1000003)");
  SymProof first = prover.prove(wrong), second = prover.prove(wrong);
  EXPECT_EQ(first.truth, SymTruth::proven_false);
  EXPECT_EQ(second.counterexample, first.counterexample);
  EXPECT_EQ(prover.stats().proof_cache_hits, 1);
  EXPECT_EQ(prover.stats().z3_calls, 2);
}

TEST(SymProve, WithoutZ3WhatRemainsIsUnknown) {
  SymProverOptions options;
  options.use_z3 = false;
  SymProver prover(options);
  SymObligation o = prover.require(cond("min(s, t) + max(s, t)", SymRel::eq, "s + t"));
  EXPECT_EQ(o.proof.truth, SymTruth::unknown);
  ASSERT_TRUE(o.runtime_check);
  EXPECT_TRUE(o.runtime_check->holds({{"s", 3}, {"t", 9}}));
}

// The example of docs/symbolic-shapes.md ("API at a glance"), kept compiling and true.
TEST(SymProve, DocumentationExample) {
  SymScope scope;
  const SymVar& n = scope.declare("n", 1, 2048);
  const SymVar& s = scope.declare("s");
  SymExpr numel = 4 * n * floordiv(s + 63, 64);
  SymExpr same = parse_sym_expr("floordiv(s + 63, 64) * n * 4", scope);
  EXPECT_TRUE(numel == same);
  EXPECT_EQ(upper_bound(4 * n), 8192);
  EXPECT_EQ(evaluate(numel, {{"n", 3}, {"s", 100}}), 24);
  SymProver prover;
  SymProof p = prover.prove_le(s, floordiv(s + 63, 64) * 64);
  EXPECT_EQ(p.truth, SymTruth::proven_true);
  EXPECT_EQ(p.method, SymMethod::interval);
  SymObligation o = prover.require({SymRel::eq, n, s});
  EXPECT_EQ(o.proof.truth, SymTruth::proven_false);
  EXPECT_EQ(o.proof.counterexample, (SymBinding{{"n", 1}, {"s", 0}}));
}

TEST(SymConcurrency, OneProverServesManyThreads) {
  std::vector<SymCondition> conditions = {
      cond("min(s, t) + max(s, t)", SymRel::eq, "s + t"),
      cond("m * floordiv(n, m)", SymRel::le, "n"),
      cond("floordiv(s + 3, 4)", SymRel::le, "floordiv(s, 4) + 1"),
      cond("n", SymRel::eq, "m"),
      cond("mod(s, 1000003)", SymRel::eq, "s"),
      cond("floordiv(4 * n, 2)", SymRel::eq, "2 * n"),
  };
  SymProver serial;
  std::vector<SymProof> expected;
  for (const SymCondition& c : conditions) expected.push_back(serial.prove(c));

  SymProver shared;
  const int kRounds = 8;
  std::vector<SymProof> got(conditions.size() * kRounds);
  parallel_for_index(static_cast<int64_t>(got.size()), 4, [&](int64_t i) {
    // Each thread also builds and prints its own expressions from shared atoms.
    const SymCondition& c = conditions[static_cast<size_t>(i) % conditions.size()];
    SymCondition copy{c.rel, c.lhs + 0, c.rhs * 1};
    (void)copy.str();
    got[static_cast<size_t>(i)] = shared.prove(copy);
  });
  for (size_t i = 0; i < got.size(); ++i) {
    const SymProof& want = expected[i % conditions.size()];
    EXPECT_EQ(got[i].truth, want.truth) << i;
    EXPECT_EQ(got[i].method, want.method) << i;
    EXPECT_EQ(got[i].counterexample, want.counterexample) << i;
  }
  SymProverStats st = shared.stats();
  EXPECT_EQ(st.queries, static_cast<int64_t>(got.size()));
  EXPECT_LE(st.z3_calls, 3 * 4);  // at most each thread once per Z3 query before the cache fills
}

}  // namespace
}  // namespace weft
