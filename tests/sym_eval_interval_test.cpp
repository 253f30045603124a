// Tests of evaluation under a binding (values, floor semantics, every error) and of interval
// bounds (ranges of each atom kind, saturation, monotone refinement, upper bounds).
#include <gtest/gtest.h>

#include "sym/evaluate.h"
#include "sym/interval.h"
#include "tests/sym_test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

using test::sx;

std::string eval_error(const std::string& text, const SymBinding& binding) {
  SymEvalResult r = try_evaluate(sx(text), binding);
  EXPECT_FALSE(r.value) << text;
  EXPECT_THROW(evaluate(sx(text), binding), UserError);
  return r.error;
}

TEST(SymEval, ValuesAndFloorSemantics) {
  SymBinding at{{"n", 3}, {"s", 9}, {"x", -5}, {"m", 4}, {"t", 2}};
  EXPECT_EQ(evaluate(sx("2 * n + floordiv(s, 4)"), at), 8);
  EXPECT_EQ(evaluate(sx("floordiv(x, 4)"), at), -2);
  EXPECT_EQ(evaluate(sx("mod(x, 4)"), at), 3);
  EXPECT_EQ(evaluate(sx("floordiv(s, m) + mod(s, m)"), at), 3);
  EXPECT_EQ(evaluate(sx("min(n, t, s) * max(n, t, s)"), at), 18);
  EXPECT_EQ(evaluate(sx("n * n * n - x"), at), 32);
  EXPECT_EQ(evaluate(sx("7"), {}), 7);
}

TEST(SymEval, ErrorsNameTheProblem) {
  EXPECT_EQ(eval_error("n + s", {{"n", 1}}), "no value for symbolic variable 's'");
  EXPECT_EQ(eval_error("n", {{"n", 5000}}),
            "symbolic variable 'n' = 5000 is outside its bounds [1, 2048]");
  EXPECT_EQ(eval_error("s", {{"s", -1}}),
            "symbolic variable 's' = -1 is outside its bounds [0, inf)");
  EXPECT_NE(eval_error("u * u * u * u", {{"u", int64_t{1} << 20}}).find("integer overflow"),
            std::string::npos);
  EXPECT_EQ(eval_error("floordiv(n, x)", {{"n", 4}, {"x", 0}}),
            "divisor x of floordiv(n, x) is 0 at n=4, x=0; it must be positive");
  EXPECT_NE(eval_error("mod(n, x + 2)", {{"n", 4}, {"x", -3}}).find("is -1"), std::string::npos);
}

TEST(SymEval, BindingText) {
  EXPECT_EQ(binding_str({{"n", 3}, {"m", -1}}), "m=-1, n=3");
  EXPECT_EQ(binding_str({}), "the empty binding");
}

TEST(SymInterval, RangesOfEachAtomKind) {
  auto range = [](const std::string& text) {
    SymRange r = natural_range(sx(text));
    return std::make_pair(r.lo64(), r.hi64());
  };
  using R = std::pair<std::optional<int64_t>, std::optional<int64_t>>;
  EXPECT_EQ(range("n"), R(1, 2048));
  EXPECT_EQ(range("s"), R(0, std::nullopt));
  EXPECT_EQ(range("n - m"), R(1 - 64, 2048 - 1));
  EXPECT_EQ(range("x * x"), R(0, 64));  // an even power of a range around 0
  EXPECT_EQ(range("x * x * x"), R(-512, 512));
  EXPECT_EQ(range("x * m"), R(-8 * 64, 8 * 64));
  EXPECT_EQ(range("floordiv(n, 8)"), R(0, 256));
  EXPECT_EQ(range("floordiv(x, 4)"), R(-2, 2));
  EXPECT_EQ(range("floordiv(n, m)"), R(0, 2048));
  EXPECT_EQ(range("floordiv(x, m)"), R(-8, 8));
  EXPECT_EQ(range("floordiv(x, u)"), R(-8, 8));  // u unbounded: floor(-8 / big) = -1 included
  EXPECT_EQ(range("mod(s, 8)"), R(0, 7));
  EXPECT_EQ(range("mod(n, m)"), R(0, 63));
  EXPECT_EQ(range("mod(s, u)"), R(0, std::nullopt));
  EXPECT_EQ(range("min(n, m + 100)"), R(1, 164));
  EXPECT_EQ(range("max(x, m)"), R(1, 64));
}

TEST(SymInterval, SaturatesInsteadOfOverflowing) {
  SymRange huge = SymRange::point(int64_t{1} << 62);
  SymRange four = SymRange::point(4);
  SymRange p = huge * four;  // 2^64: beyond int64
  EXPECT_FALSE(p.hi_finite());
  EXPECT_EQ(p.lo64(), INT64_MAX);  // a valid lower bound, never +infinity
  EXPECT_FALSE((-(huge * four)).lo_finite());
  SymRange all = SymRange::everything();
  EXPECT_EQ(all * SymRange::point(0), SymRange::point(0));
  EXPECT_FALSE(range_power(all, 2).hi_finite());
  EXPECT_EQ(range_power(all, 2).lo64(), 0);
  EXPECT_EQ(range_floordiv(SymRange::point(5), SymRange::of(-3, 0)), SymRange::everything());
}

TEST(SymInterval, MonotonicityTightensBounds) {
  // Natural extension: n*m - n >= 1*1 - 2048; n*m - n = n*(m-1) is increasing in m, so 0.
  EXPECT_EQ(natural_range(sx("n * m - n")).lo64(), 1 - 2048);
  EXPECT_EQ(lower_bound(sx("n * m - n")), 0);
  EXPECT_EQ(upper_bound(sx("n * m - n")), 2048 * 63);
  EXPECT_EQ(lower_bound(sx("n * n - 2 * n")), -1);  // (n-1)^2 - 1, increasing for n >= 1
}

TEST(SymInterval, UpperBoundsForMemoryPlanning) {
  EXPECT_EQ(upper_bound(sx("b * n * 256")), 8 * 2048 * 256);
  EXPECT_EQ(upper_bound(sx("64 * floordiv(n + 63, 64)")), 2048);
  EXPECT_EQ(upper_bound(sx("n * (m + 1) * 2")), 2048 * 65 * 2);
  EXPECT_EQ(upper_bound(sx("min(s, n)")), 2048);
  EXPECT_EQ(upper_bound(sx("s")), std::nullopt);
  EXPECT_EQ(upper_bound(sx("u * u * u * u * 1024 * 1024")), std::nullopt);
  EXPECT_EQ(lower_bound(sx("s - n")), -2048);
  EXPECT_EQ(upper_bound(sx("7")), 7);
}

}  // namespace
}  // namespace weft
