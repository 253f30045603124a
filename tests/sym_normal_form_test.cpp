// Unit tests of the symbolic normal form: one test per rule of the ring operations, floordiv,
// mod, min and max, plus the representation (equality, hashing, printing, variables).
#include <gtest/gtest.h>

#include "sym/evaluate.h"
#include "sym/expr.h"
#include "tests/sym_test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

using test::sx;

// `input` normalizes to exactly `expected` (both parsed in the shared scope), printed as
// `expected` is written.
void expect_nf(const std::string& input, const std::string& expected) {
  SymExpr e = sx(input);
  EXPECT_EQ(e.str(), expected) << "normal form of " << input;
  EXPECT_TRUE(e == sx(expected)) << input;
}

TEST(SymNormalForm, ConstantsFold) {
  expect_nf("2 + 3 * 4 - 1", "13");
  expect_nf("-(-(7))", "7");
  EXPECT_EQ(sx("5").as_constant(), 5);
  EXPECT_FALSE(sx("n").as_constant());
}

TEST(SymNormalForm, LikeTermsMergeAndCancel) {
  expect_nf("n + n + 3 * n", "5 * n");
  expect_nf("n - n", "0");
  expect_nf("2 * n * m - m * n * 2", "0");
  expect_nf("s + 1 - (s - 1)", "2");
}

TEST(SymNormalForm, ProductsDistributeAndOrderFactors) {
  expect_nf("(n + 1) * (n - 1)", "n * n - 1");
  expect_nf("(s + t) * (s - t)", "s * s - t * t");
  EXPECT_TRUE(sx("m * n") == sx("n * m"));
  EXPECT_TRUE(sx("n + m") == sx("m + n"));
  expect_nf("2 * (n + 3) * m", "2 * m * n + 6 * m");
}

TEST(SymNormalForm, PrintsPositiveTermsFirst) {
  expect_nf("-m + n", "n - m");
  expect_nf("-n - 4", "-n - 4");
  expect_nf("0 - 2 * n", "-2 * n");
}

TEST(SymNormalForm, OverflowIsAUserError) {
  SymExpr big = int64_t{1} << 62;
  EXPECT_THROW(big * 2, UserError);
  EXPECT_THROW(SymExpr(INT64_MAX) + 1, UserError);
  EXPECT_THROW(SymExpr(INT64_MIN), UserError);
  EXPECT_THROW(sx("n") * (int64_t{1} << 62) * 4, UserError);
  EXPECT_NO_THROW(SymExpr(-INT64_MAX));
}

TEST(SymNormalForm, SizeLimitsAreUserErrors) {
  SymExpr sum = 0;
  for (int i = 0; i < 70; ++i) sum = sum + SymVar("v" + std::to_string(i), 0, 10);
  EXPECT_THROW(sum * sum * sum, UserError);  // 70^2 terms, then 70^3
  SymExpr power = sx("n");
  EXPECT_THROW(
      {
        for (int i = 0; i < 70; ++i) power = power * sx("n");
      },
      UserError);
}

TEST(SymNormalForm, FloorDivByConstantTakesOutMultiples) {
  expect_nf("floordiv(4 * n, 2)", "2 * n");
  expect_nf("floordiv(8 * n + s + 9, 4)", "2 * n + floordiv(s + 1, 4) + 2");
  expect_nf("floordiv(n, 1)", "n");
  expect_nf("floordiv(7, 2)", "3");
  expect_nf("floordiv(-7, 2)", "-4");
}

TEST(SymNormalForm, DivisionCoefficientsReduceModuloTheDivisor) {
  expect_nf("floordiv(5 * s, 4)", "s + floordiv(s, 4)");
  EXPECT_TRUE(sx("floordiv(5 * s, 4)") == sx("s + floordiv(s, 4)"));
  expect_nf("floordiv(-s, 4)", "floordiv(3 * s, 4) - s");
  expect_nf("mod(-s, 4)", "mod(3 * s, 4)");
  expect_nf("mod(9 * s + t, 4)", "mod(s + t, 4)");
}

TEST(SymNormalForm, FloorDivReducesByCommonFactor) {
  // floor((g*S + r) / (g*k)) = floor((S + floor(r/g)) / k)
  expect_nf("floordiv(4 * n + 2, 8)", "floordiv(n, 2)");
  expect_nf("floordiv(6 * s + 2, 4)", "s + floordiv(s + 1, 2)");
}

TEST(SymNormalForm, NestedFloorDivsMerge) {
  expect_nf("floordiv(floordiv(s, 4), 2)", "floordiv(s, 8)");
  expect_nf("floordiv(floordiv(s, 4) + 1, 2)", "floordiv(s + 4, 8)");
}

TEST(SymNormalForm, FloorDivDecidedByRanges) {
  expect_nf("floordiv(n, 4096)", "0");       // n <= 2048
  expect_nf("floordiv(mod(s, 4), 4)", "0");  // mod(s, 4) <= 3
  expect_nf("floordiv(m + 63, 128)", "0");
  expect_nf("floordiv(m + 64, 64) - floordiv(m, 64)", "1");
}

TEST(SymNormalForm, FloorDivBySymbolicDivisor) {
  expect_nf("floordiv(n * m + 3, m)", "n + floordiv(3, m)");
  expect_nf("floordiv(6 * n * m * m, 2 * m)", "3 * m * n");
  expect_nf("floordiv(n, n)", "1");
  expect_nf("floordiv(0, m)", "0");
  expect_nf("floordiv(1, b)", "0");  // b >= 2
  expect_nf("floordiv(s, m)", "floordiv(s, m)");
  EXPECT_NO_THROW(sx("floordiv(n, x)"));  // x may be <= 0: checked when evaluated
}

TEST(SymNormalForm, NonPositiveDivisorsAreRejected) {
  EXPECT_THROW(floordiv(sx("n"), 0), UserError);
  EXPECT_THROW(floordiv(sx("n"), -2), UserError);
  EXPECT_THROW(floormod(sx("n"), 0), UserError);
  EXPECT_THROW(floordiv(sx("n"), sx("-m")), UserError);  // never positive
}

TEST(SymNormalForm, ModByConstantDropsMultiples) {
  expect_nf("mod(8 * s + 4 * t, 4)", "0");
  expect_nf("mod(8 * s + t + 13, 4)", "mod(t + 1, 4)");
  expect_nf("mod(n, 1)", "0");
  expect_nf("mod(7, 3)", "1");
  expect_nf("mod(-7, 3)", "2");
}

TEST(SymNormalForm, ModReducesByCommonFactor) {
  // mod(g*S + r, g*k) = g * mod(S + floor(r/g), k) + r mod g
  expect_nf("mod(4 * n + 6, 8)", "4 * mod(n + 1, 2) + 2");
  expect_nf("mod(6 * s, 4)", "2 * mod(s, 2)");
}

TEST(SymNormalForm, NestedModsMerge) {
  expect_nf("mod(mod(s, 8), 4)", "mod(s, 4)");
  expect_nf("mod(mod(s, 8) + 1, 4)", "mod(s + 1, 4)");
  expect_nf("mod(mod(s, 4), 8)", "mod(s, 4)");  // by range: mod(s, 4) < 8
}

TEST(SymNormalForm, ModDecidedByRanges) {
  expect_nf("mod(n, 4096)", "n");
  expect_nf("mod(m + 63, 64)", "m - 1");  // m + 63 in [64, 127]
  expect_nf("mod(x + 8, 17)", "x + 8");
}

TEST(SymNormalForm, ModBySymbolicDivisor) {
  expect_nf("mod(n * m + 3, m)", "mod(3, m)");
  expect_nf("mod(n, n)", "0");
  expect_nf("mod(1, b)", "1");
  expect_nf("mod(s, m)", "mod(s, m)");
}

TEST(SymNormalForm, MinMaxDropDominatedOperands) {
  expect_nf("min(n, n + 1)", "n");
  expect_nf("max(n, n + 1)", "n + 1");
  expect_nf("min(n, 4096)", "n");
  expect_nf("max(n, 0)", "n");
  expect_nf("min(x, 8)", "x");
  expect_nf("max(s, s)", "s");
}

TEST(SymNormalForm, MinMaxFoldConstantsAndFlatten) {
  expect_nf("min(3, 5, s + 9)", "3");
  expect_nf("min(s, min(t, 3))", "min(3, s, t)");
  expect_nf("max(max(s, t), max(t, u))", "max(s, t, u)");
  expect_nf("min(x, -max(t, u))", "min(-t, -u, x)");
  expect_nf("min(s, -max(t, u))", "-max(t, u)");  // s >= 0 >= -t
  expect_nf("min(s, 2 + min(t, u))", "min(s, t + 2, u + 2)");
}

TEST(SymNormalForm, MinMaxTakeOutCommonPartAndFactor) {
  expect_nf("min(s + 2, t + 5)", "min(s, t + 3) + 2");
  expect_nf("max(2 * s, 2 * t)", "2 * max(s, t)");
  expect_nf("min(4 * s + 2, 6 * t)", "2 * min(2 * s + 1, 3 * t)");
  expect_nf("max(n + s, n + t)", "n + max(s, t)");
}

TEST(SymNormalForm, MinMaxKeepOneSign) {
  expect_nf("max(-s, -t)", "-min(s, t)");
  expect_nf("min(-s, -t - 1)", "-max(s, t + 1)");
  EXPECT_TRUE(sx("min(s, t)") == sx("min(t, s)"));
}

TEST(SymNormalForm, MinMaxSizeIsLimited) {
  std::vector<SymExpr> many;
  for (int i = 0; i < 65; ++i) many.push_back(SymVar("v" + std::to_string(i), 0, 10));
  EXPECT_THROW(SymExpr::min_of(many), UserError);
  many.resize(64);
  EXPECT_NO_THROW(SymExpr::max_of(many));
  // A sum of 20 mins would flatten into 2^20 operands; flattening stops early instead.
  SymExpr sum = 0;
  SymBinding at;
  int64_t want = 0;
  for (int i = 0; i < 20; ++i) {
    SymVar a("a" + std::to_string(i), 0, 100), b("b" + std::to_string(i), 0, 100);
    sum = sum + min(a, b);
    at[a.name()] = i;
    at[b.name()] = 2 * i;
    want += i;
  }
  SymExpr e = min(sx("t"), sum);
  at["t"] = 1000;
  EXPECT_EQ(evaluate(e, at), want);
}

TEST(SymNormalForm, EqualExpressionsHashEqual) {
  EXPECT_EQ(sx("floordiv(n + m, 4) * 2").hash(), sx("2 * floordiv(m + n, 4)").hash());
  EXPECT_EQ(sx("min(s, t) + 1").hash(), sx("1 + min(t, s)").hash());
  EXPECT_NE(sx("n").hash(), sx("m").hash());
}

TEST(SymNormalForm, VariablesWithOtherBoundsAreOtherVariables) {
  SymVar n_small("n", 1, 16);
  EXPECT_FALSE(n_small == sx("n"));
  EXPECT_NE(n_small.hash(), sx("n").hash());
  // Mixing them in one expression is a caller bug (a SymScope prevents it).
  EXPECT_THROW(n_small + sx("n"), InternalError);
}

TEST(SymNormalForm, VariableDeclarationsAreChecked) {
  EXPECT_THROW(SymVar("2n"), UserError);
  EXPECT_THROW(SymVar(""), UserError);
  EXPECT_THROW(SymVar("min"), UserError);
  EXPECT_THROW(SymVar("n", 5, 4), UserError);
  EXPECT_THROW(SymVar("n", 0, (int64_t{1} << 62) + 1), UserError);
  SymVar v("seq_len", 1, 4096);
  EXPECT_EQ(v.name(), "seq_len");
  EXPECT_EQ(v.decl_str(), "1 <= seq_len <= 4096");
  EXPECT_EQ(SymVar("s").decl_str(), "0 <= s");
  EXPECT_EQ(v.as_atom()->kind, SymAtomKind::var);
}

TEST(SymNormalForm, OperatorsBuildTheSameFormAsTheParser) {
  SymVar n("n", 1, 2048), m("m", 1, 64), s("s");
  EXPECT_TRUE(2 * n + floordiv(s, 4) == sx("2 * n + floordiv(s, 4)"));
  EXPECT_TRUE(min(n, m) * 3 - floormod(n, 8) == sx("3 * min(m, n) - mod(n, 8)"));
  EXPECT_TRUE(max(n + 1, n) == n + 1);
}

}  // namespace
}  // namespace weft
