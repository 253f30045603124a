// Tests of the symbolic-expression text form: precedence, round trips, located errors, and
// hostile input that must end in a UserError, never a crash.
#include <gtest/gtest.h>

#include <random>

#include "sym/parse.h"
#include "tests/sym_test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

using test::sx;
using test::sym_scope;

TEST(SymParse, PrecedenceAndAssociativity) {
  EXPECT_TRUE(sx("2 + 3 * n") == 3 * sx("n") + 2);
  EXPECT_TRUE(sx("n - m - s") == sx("n") - (sx("m") + sx("s")));
  EXPECT_TRUE(sx("-(n + 1) * 2") == -2 * sx("n") - 2);
  EXPECT_TRUE(sx("--n") == sx("n"));
  EXPECT_TRUE(sx(" floordiv ( n ,\n 4 )") == floordiv(sx("n"), 4));
}

TEST(SymParse, PrintedFormsRoundTrip) {
  for (const char* text :
       {"0", "-5", "n", "-n", "2 * n + floordiv(s, 4)", "n * n * m - 3", "n - m",
        "4 * mod(n + 1, 2) + 2", "min(3, s, t)", "-min(s, t)", "2 * max(m, n) + 1",
        "floordiv(s, m) + mod(t, u)", "floordiv(min(s, t) + 1, 8) * max(n, 7)",
        "9223372036854775807", "-9223372036854775807"}) {
    SymExpr e = sx(text);
    std::string printed = e.str();
    SymExpr back = sx(printed);
    EXPECT_TRUE(back == e) << text << " printed as " << printed;
    EXPECT_EQ(back.str(), printed);
  }
}

struct BadInput {
  std::string text;
  int line, col;
  std::string message;  // a part of the message
};

TEST(SymParse, ErrorsAreLocated) {
  std::vector<BadInput> cases = {
      {"n + q", 1, 5, "undefined symbolic variable 'q'"},
      {"n +", 1, 4, "found the end of the expression"},
      {"n / 2", 1, 3, "floordiv(a, b)"},
      {"n % 2", 1, 3, "mod(a, b)"},
      {"floordiv(n)", 1, 1, "floordiv takes 2 arguments, found 1"},
      {"mod(n, 2, 3)", 1, 1, "mod takes 2 arguments, found 3"},
      {"min(n)", 1, 1, "min takes 2 or more arguments"},
      {"max n", 1, 5, "expected '(' after max"},
      {"n * floordiv(n, 0)", 1, 5, "the divisor must be positive"},
      {"floordiv(n, m - 100)", 1, 1, "the divisor is never positive"},
      {"99999999999999999999", 1, 1, "out of range"},
      {"n\n  + @", 2, 5, "unexpected character '@'"},
      {"2n", 1, 2, "expected an operator"},
      {"(n + 1", 1, 7, "expected ')'"},
      {"min(n, 3", 1, 9, "expected ',' or ')'"},
      {"\x01", 1, 1, "unexpected byte 0x01"},
      {"", 1, 1, "expected an integer"},
      {"9223372036854775807 + 1", 1, 21, "overflows int64"},
      {"n * )", 1, 5, "found ')'"},
  };
  for (const BadInput& c : cases) {
    try {
      parse_sym_expr(c.text, sym_scope());
      ADD_FAILURE() << "'" << c.text << "' parsed";
    } catch (const UserError& e) {
      EXPECT_EQ(e.loc().line, c.line) << c.text << ": " << e.what();
      EXPECT_EQ(e.loc().col, c.col) << c.text << ": " << e.what();
      EXPECT_NE(e.message().find(c.message), std::string::npos) << c.text << ": " << e.what();
    }
  }
}

TEST(SymParse, DeepNestingIsAnErrorNotAStackOverflow) {
  std::string deep(100000, '(');
  EXPECT_THROW(parse_sym_expr(deep + "n", sym_scope()), UserError);
  std::string minus(100000, '-');
  EXPECT_THROW(parse_sym_expr(minus + "n", sym_scope()), UserError);
  std::string fine = std::string(200, '(') + "n" + std::string(200, ')');
  EXPECT_TRUE(sx(fine) == sx("n"));
}

TEST(SymParse, OriginOffsetsPositions) {
  SourceLoc origin{"model.wmod", 3, 10};
  try {
    parse_sym_expr("n + q", sym_scope(), origin);
    FAIL() << "parsed";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), "model.wmod:3:14: error: undefined symbolic variable 'q'");
  }
  try {
    parse_sym_expr("n +\n q", sym_scope(), origin);
    FAIL() << "parsed";
  } catch (const UserError& e) {
    EXPECT_EQ(e.loc().line, 4);
    EXPECT_EQ(e.loc().col, 2);
  }
}

TEST(SymParse, HostileBytesNeverCrash) {
  const std::string alphabet = "nmst0123456789+-*(),/% floordivmodminmax\n\x7f\xff";
  std::mt19937 rng(14);
  int parsed = 0, rejected = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string text;
    size_t len = rng() % 24;
    for (size_t j = 0; j < len; ++j) text += alphabet[rng() % alphabet.size()];
    try {
      SymExpr e = parse_sym_expr(text, sym_scope());
      EXPECT_TRUE(sx(e.str()) == e) << text;
      ++parsed;
    } catch (const UserError& e) {
      EXPECT_TRUE(e.loc().known()) << text << ": " << e.what();
      ++rejected;
    }
  }
  EXPECT_GT(parsed, 100);  // the corpus is not all garbage
  EXPECT_GT(rejected, 100);
}

TEST(SymScope, DeclarationsAreUniqueAndChecked) {
  SymScope scope;
  const SymVar& n = scope.declare("n", 1, 64);
  EXPECT_EQ(scope.find("n")->hi(), 64);
  EXPECT_EQ(&n, scope.find("n"));
  EXPECT_EQ(scope.find("m"), nullptr);
  SourceLoc at{"f.wmod", 2, 5};
  try {
    scope.declare("n", 1, 8, at);
    FAIL() << "redeclared";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "f.wmod:2:5: error: symbolic variable 'n' is already declared");
  }
  try {
    scope.declare("k", 9, 8, at);
    FAIL() << "empty bounds accepted";
  } catch (const UserError& e) {
    EXPECT_EQ(e.loc().line, 2);
    EXPECT_NE(e.message().find("empty bounds [9, 8]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(scope.declare("mod"), UserError);
  EXPECT_EQ(scope.vars().size(), 1u);
}

}  // namespace
}  // namespace weft
