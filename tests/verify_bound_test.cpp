// The computed error bound against hand-derived values (docs/verification.md, "Bound").
#include <gtest/gtest.h>

#include <cmath>

#include "ir/parser.h"
#include "tests/tiers.h"
#include "verify/error_bound.h"
#include "verify/field.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

const double P = static_cast<double>(ff::kP), Q = static_cast<double>(ff::kQ);

DegreeStats stats_of(const char* text) {
  auto s = degree_stats(parse_graph(text, "<test>"));
  EXPECT_EQ(s.size(), 1u);
  return s.at(0);
}

TEST(ErrorBound, MatmulIsDegreeTwo) {
  DegreeStats s = stats_of("input X: f32[4, 8]\ninput W: f32[8, 3]\nO = matmul(X, W)\noutput O\n");
  EXPECT_EQ(s, (DegreeStats{2, 0, 0, 0, 0, 0}));
  TestBound b = output_bound(s, s);
  EXPECT_DOUBLE_EQ(b.polynomial, 2 / P);
  EXPECT_EQ(b.exp_collision, 0);
  EXPECT_EQ(b.uf_collision, 0);
  // 2/p ~ 2^-50: two tests reach 2^-60.
  EXPECT_EQ(tests_needed(b.total, std::ldexp(1.0, -60)), 2);
  EXPECT_EQ(tests_needed(b.total, std::ldexp(1.0, -40)), 1);
}

TEST(ErrorBound, DivisionAndSumsOfFractions) {
  // (X / Y) summed over 4: numerator 1 + 3 * 1, denominator 4 * 1.
  DegreeStats s = stats_of(
      "input X: f32[2, 4]\ninput Y: f32[2, 4]\nD = div(X, Y)\nS = sum(D, dim=1)\noutput S\n");
  EXPECT_EQ(s, (DegreeStats{4, 4, 0, 0, 0, 0}));
  EXPECT_DOUBLE_EQ(output_bound(s, s).total, 8 / P);
}

TEST(ErrorBound, RmsNormHasOneUninterpretedSqrt) {
  // x / sqrt(mean(x^2)): sqrt's argument has degree 2; the result is x / u with u fresh.
  DegreeStats s = stats_of("input X: f32[2, 4]\nN = rms_norm(X)\noutput N\n");
  EXPECT_EQ(s, (DegreeStats{1, 1, 0, 1, 0, 2}));
  TestBound b = output_bound(s, s);
  // Two sqrt applications (one per program) may collide: C(2,2) * 2 * 2 / p; numerator 2.
  EXPECT_DOUBLE_EQ(b.uf_collision, 4 / P);
  EXPECT_DOUBLE_EQ(b.polynomial, 2 / P);
  EXPECT_DOUBLE_EQ(b.total, 6 / P);
}

TEST(ErrorBound, SoftmaxCountsExponentialsPerElement) {
  // exp(x) / sum(exp(x)): the element's own exp lies in its row's 4, so 4 exponentials of
  // degree-1 arguments per element.
  DegreeStats s = stats_of("input X: f32[2, 4]\nS = softmax(X, dim=1)\noutput S\n");
  EXPECT_EQ(s, (DegreeStats{1, 1, 4, 0, 1, 0}));
  TestBound b = output_bound(s, s);
  EXPECT_DOUBLE_EQ(b.exp_collision, 28 * 2 / Q);  // C(8, 2) pairs, degree 2 * 1
  EXPECT_DOUBLE_EQ(b.polynomial, 2 * 9 / P);      // numerator 2, 8 exponentials + 1
}

TEST(ErrorBound, SharedExponentialsAreCountedOncePerRow) {
  // softmax [2, 4] then a matmul over 4: 4 terms of 4 + 1 uses each, but all lie in one row of
  // the exp tensor: 4 (the whole tensor has 8).
  DegreeStats s = stats_of(
      "input X: f32[2, 4]\ninput V: f32[4, 3]\nS = softmax(X, dim=1)\nO = matmul(S, V)\n"
      "output O\n");
  EXPECT_EQ(s.exps, 4);
  EXPECT_EQ(s.num, 2 + 3 * 1);
  EXPECT_EQ(s.den, 4);
}

TEST(ErrorBound, AttentionCountsOneRowOfExponentials) {
  // QK-norm attention: an output element sees the 64 exps of its query row (of 2 * 16 * 64), the
  // sqrt of its query row and the 64 sqrts of the key columns.
  DegreeStats s = stats_of(R"(input Q: f32[2, 16, 8]
input K: f32[2, 8, 64]
input V: f32[2, 64, 8]
NQ = rms_norm(Q)
NK = rms_norm(K, dim=1)
S = matmul(NQ, NK)
P = softmax(S, dim=2)
O = matmul(P, V)
output O
)");
  EXPECT_EQ(s.exps, 64);
  EXPECT_EQ(s.ufs, 1 + 64);
  // The exp argument: a sum of 8 products of two fractions, (2 + 7 * 2) / (8 * 2).
  EXPECT_EQ(s.exp_arg_deg, 16 + 16);
}

TEST(ErrorBound, GroupedReductionsKeepTheirDependence) {
  // sum to 2 groups of 4, then over the 2 groups: all 8 exps of the row (not 4: the groups differ).
  DegreeStats s = stats_of(
      "input X: f32[2, 8]\nE = exp(X)\nG = sum(E, dim=1, to=2)\nS = sum(G, dim=1)\noutput S\n");
  EXPECT_EQ(s.exps, 8);
  // Through a reshape only counts are kept: 2 * 4 = 8 as well, capped at the 16 that exist.
  DegreeStats r = stats_of(
      "input X: f32[2, 8]\nE = exp(X)\nR = reshape(E, shape=[2, 2, 4])\nG = sum(R, dim=2)\n"
      "S = sum(G, dim=1)\noutput S\n");
  EXPECT_EQ(r.exps, 8);
  // A broadcast row (size-1 dim) is one element for every column.
  DegreeStats b = stats_of(
      "input X: f32[2, 1]\ninput Y: f32[2, 8]\nE = exp(X)\nM = mul(E, Y)\nS = sum(M, dim=1)\n"
      "output S\n");
  EXPECT_EQ(b.exps, 1);
}

TEST(ErrorBound, ExponentialsInsideABlockGraphAreCountedPerBlock) {
  // Split-KV attention: each block sees 8 of 32 keys over 4 iterations of 2; the combine sums the
  // 4 partials of numerator and denominator: 2 * (4 blocks * 8) (the row has 32, the tensor 128).
  DegreeStats s = stats_of(R"(input Q: f32[2, 2, 4]
input K: f32[2, 4, 32]
input V: f32[2, 32, 4]
OP, DP = kernel(Q, K, V, grid=[2, 4], block=32, loop=4) {
  q = iter(Q, imap=[0, -])
  k = iter(K, imap=[0, 2], fmap=2)
  v = iter(V, imap=[0, 1], fmap=1)
  s = matmul(q, k)
  e = exp(s)
  d = sum(e, dim=2)
  da = accum_sum(d)
  o = matmul(e, v)
  oa = accum_sum(o)
after:
  OP = save(oa, omap=[0, 2])
  DP = save(da, omap=[0, 2])
}
O4 = reshape(OP, shape=[2, 2, 4, 4])
OS = sum(O4, dim=2)
ON = reshape(OS, shape=[2, 2, 4])
DS = sum(DP, dim=2)
O = div(ON, DS)
output O
)");
  EXPECT_EQ(s.exps, 64);
}

TEST(ErrorBound, BlockGraphsMultiplyByTheLoop) {
  // A fused matmul: each iteration multiplies a [4, 2] by a [2, 3] chunk; 4 iterations summed.
  DegreeStats s = stats_of(R"(input X: f32[4, 8]
input W: f32[8, 3]
O = kernel(X, W, grid=[1], block=32, loop=4) {
  x = iter(X, fmap=1)
  w = iter(W, fmap=0)
  m = matmul(x, w)
  a = accum_sum(m)
after:
  O = save(a, omap=[-])
}
output O
)");
  EXPECT_EQ(s, (DegreeStats{2, 0, 0, 0, 0, 0}));
}

TEST(ErrorBound, RejectsHopelessTargets) {
  EXPECT_THROW(tests_needed(1.0, 1e-18), UserError);
  EXPECT_THROW(tests_needed(0.5, 0.0), UserError);
  EXPECT_EQ(tests_needed(0.5, 0.25), 2);
  EXPECT_EQ(tests_needed(0.5, 0.2), 3);
}

}  // namespace
}  // namespace weft
