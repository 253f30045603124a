// The computed error bound against hand-derived values (docs/verification.md, "Bound").
#include <gtest/gtest.h>

#include <cmath>

#include "ir/parser.h"
#include "verify/error_bound.h"
#include "verify/field.h"

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
  // exp(x) / sum(exp(x)): 1 + 4 exponentials of degree-1 arguments per element.
  DegreeStats s = stats_of("input X: f32[2, 4]\nS = softmax(X, dim=1)\noutput S\n");
  EXPECT_EQ(s, (DegreeStats{1, 1, 5, 0, 1, 0}));
  TestBound b = output_bound(s, s);
  EXPECT_DOUBLE_EQ(b.exp_collision, 45 * 2 / Q);  // C(10, 2) pairs, degree 2 * 1
  EXPECT_DOUBLE_EQ(b.polynomial, 2 * 11 / P);     // numerator 2, 10 exponentials + 1
}

TEST(ErrorBound, SharedExponentialsAreCappedAtTheirTensorSize) {
  // softmax [2, 4] then a matmul over 4: 4 * 5 = 20 uses, but only 8 exps exist.
  DegreeStats s = stats_of(
      "input X: f32[2, 4]\ninput V: f32[4, 3]\nS = softmax(X, dim=1)\nO = matmul(S, V)\n"
      "output O\n");
  EXPECT_EQ(s.exps, 8);
  EXPECT_EQ(s.num, 2 + 3 * 1);
  EXPECT_EQ(s.den, 4);
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
