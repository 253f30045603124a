// Tests of the constant-aware screen before verification (search/constant_screen.h): it turns
// away a constant in the wrong place and keeps the places the axioms allow.
#include <gtest/gtest.h>

#include <string>

#include "ir/parser.h"
#include "search/constant_screen.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

Graph program(const std::string& body) {
  return parse_graph("program p\ninput Q: f32[4, 8]\ninput K: f32[8, 16]\n" + body + "output O\n",
                     "test.weft");
}

// softmax-free attention scores: exp(Q K / 8).
const char* kScores = "S = matmul(Q, K)\nT = scale(S, factor=1/8)\nO = exp(T)\n";

TEST(ConstantScreen, TurnsAwayAScaleOutsideItsFunction) {
  ConstantScreen screen(program(kScores));
  EXPECT_TRUE(screen.may_be_equivalent(program(kScores)));
  // exp(S) / 8 is not exp(S / 8); constant-blind abstract expressions call them equal.
  EXPECT_FALSE(screen.may_be_equivalent(
      program("S = matmul(Q, K)\nE = exp(S)\nO = scale(E, factor=1/8)\n")));
  // Without its scale at all.
  EXPECT_FALSE(screen.may_be_equivalent(program("S = matmul(Q, K)\nO = exp(S)\n")));
}

TEST(ConstantScreen, KeepsTheScalesPlacesTheAxiomsAllow) {
  ConstantScreen screen(program(kScores));
  // On an operand of the matmul (a reduction of products carries the factor out).
  EXPECT_TRUE(screen.may_be_equivalent(
      program("R = scale(Q, factor=1/8)\nS = matmul(R, K)\nO = exp(S)\n")));
  // Two scales merge into one.
  EXPECT_TRUE(screen.may_be_equivalent(program(
      "S = matmul(Q, K)\nA = scale(S, factor=1/2)\nT = scale(A, factor=1/4)\nO = exp(T)\n")));
}

TEST(ConstantScreen, AMeanIsASumAndItsScale) {
  ConstantScreen screen(program("O = mean(K, dim=1)\n"));
  EXPECT_TRUE(screen.may_be_equivalent(program("M = sum(K, dim=1)\nO = scale(M, factor=1/16)\n")));
  EXPECT_FALSE(screen.may_be_equivalent(program("O = sum(K, dim=1)\n")));
}

// No false rejection: OptimizeAnytime.BaselinesOfRandomProgramsAreNeverWrong checks that every
// rule-built candidate of random programs the verifier proves equivalent passes the screen.

}  // namespace
}  // namespace weft
