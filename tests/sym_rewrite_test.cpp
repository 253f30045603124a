// Tests of whole-expression rewrites: substitution (bounds respected), mod expansion, and the
// variable and divisor lists.
#include <gtest/gtest.h>

#include "sym/evaluate.h"
#include "sym/rewrite.h"
#include "tests/sym_test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

using test::sx;

TEST(SymRewrite, SubstituteRenormalizes) {
  EXPECT_TRUE(substitute(sx("floordiv(s + t, 4)"), {{"t", sx("3 * s + 8")}}) == sx("s + 2"));
  EXPECT_TRUE(substitute(sx("min(n, m) * s"), {{"s", 2}, {"n", sx("m + 1")}}) == sx("2 * m"));
  EXPECT_TRUE(substitute(sx("n + m"), {}) == sx("n + m"));
  // A call binds the callee's n to the caller's 2 * m: the shape is recomputed in the caller.
  EXPECT_TRUE(substitute(sx("floordiv(n * 4, 8)"), {{"n", sx("2 * m")}}) == sx("m"));
}

TEST(SymRewrite, SubstitutedConstantsMustFitTheBounds) {
  EXPECT_THROW(substitute(sx("n"), {{"n", 5000}}), UserError);
  EXPECT_THROW(substitute(sx("s + 1"), {{"s", -1}}), UserError);
  EXPECT_THROW(substitute(sx("floordiv(s, u)"), {{"u", 0}}), UserError);
  EXPECT_EQ(substitute(sx("floordiv(s, u)"), {{"u", 4}, {"s", 9}}).as_constant(), 2);
}

TEST(SymRewrite, ExpandModJoinsFloorDivAndMod) {
  EXPECT_TRUE(expand_mod(sx("4 * floordiv(s, 4) + mod(s, 4)")) == sx("s"));
  EXPECT_TRUE(expand_mod(sx("mod(s, m)")) == sx("s - m * floordiv(s, m)"));
  EXPECT_TRUE(expand_mod(sx("min(mod(s, 8), t)")) == sx("min(s - 8 * floordiv(s, 8), t)"));
}

TEST(SymRewrite, VariablesAndDivisors) {
  std::vector<std::string> names;
  for (const SymVar& v : sym_variables(sx("floordiv(t, m) + min(x, n) * s + t")))
    names.push_back(v.name());
  EXPECT_EQ(names, (std::vector<std::string>{"m", "n", "s", "t", "x"}));
  std::vector<SymExpr> divisors =
      sym_divisors(sx("floordiv(t, m) + mod(s, 8) + floordiv(t, m + 1)"));
  ASSERT_EQ(divisors.size(), 3u);
  EXPECT_TRUE(divisors[0] == sx("8"));
  EXPECT_TRUE(sym_always_defined(sx("floordiv(t, m) + mod(s, u + 1)")));
  EXPECT_FALSE(sym_always_defined(sx("floordiv(t, x)")));
}

}  // namespace
}  // namespace weft
