// The `interface NAME(...)` statement: its text round-trips through the graph and the plan, and a
// malformed or dangling declaration is refused at its line and column.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "core/target.h"
#include "ir/interface.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "lower/pipeline.h"
#include "lower/plan_text.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

const char* const kProgram = R"(program p
input A: f32[4, 8]
input B: f32[8, 4]
input C: f32[4, 4]
P = matmul(A, B)
Q = add(P, C)
R = exp(Q)
output P
output R
)";

std::string with(const std::string& statement) {
  return kProgram + statement + "\n";
}

// The message of the UserError parsing `text` throws, or "" when it parses.
std::string parse_error(const std::string& text) {
  try {
    parse_graph(text, "t.weft");
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(Interface, RoundTripsThroughTheGraphText) {
  Graph g = parse_graph(with("interface pair(first=A, rest=[B, C], out=[P, R])"), "t.weft");
  ASSERT_EQ(g.interfaces.size(), 1u);
  const ProgramInterface& i = g.interfaces[0];
  EXPECT_EQ(i.name, "pair");
  ASSERT_NE(i.find("rest"), nullptr);
  EXPECT_EQ(*i.find("rest"), (std::vector<std::string>{"B", "C"}));
  EXPECT_EQ(i.find("absent"), nullptr);
  std::string printed = print_graph(g);
  EXPECT_NE(printed.find("interface pair(first=A, rest=[B, C], out=[P, R])"), std::string::npos)
      << printed;
  EXPECT_EQ(parse_graph(printed, "t.weft"), g);
}

TEST(Interface, AOneValueListReadsBackAsTheValue) {
  Graph bracketed = parse_graph(with("interface x(first=[A])"), "t.weft");
  Graph plain = parse_graph(with("interface x(first=A)"), "t.weft");
  EXPECT_EQ(bracketed, plain);
  EXPECT_NE(print_graph(bracketed).find("interface x(first=A)"), std::string::npos);
}

TEST(Interface, TakesPartInGraphEquality) {
  Graph a = parse_graph(with("interface x(first=A)"), "t.weft");
  Graph b = parse_graph(with("interface x(first=B)"), "t.weft");
  Graph none = parse_graph(kProgram, "t.weft");
  EXPECT_FALSE(a == b);
  EXPECT_FALSE(a == none);
}

TEST(Interface, LoweringCarriesItIntoThePlanAndItsText) {
  Graph g = parse_graph(with("interface pair(first=A, out=[P, R])"), "t.weft");
  ProgramPlan plan = lower_graph(g, target_by_name("cpu"));
  ASSERT_EQ(plan.interfaces.size(), 1u);
  EXPECT_EQ(plan.interfaces[0], g.interfaces[0]);
  std::string text = print_plan(plan);
  EXPECT_NE(text.find("interface pair"), std::string::npos) << text;
  EXPECT_EQ(parse_plan(text), plan);
}

TEST(Interface, MalformedDeclarationsAreRefusedAtTheirLocation) {
  struct Case {
    std::string statement, expected;
  };
  for (const Case& c : std::vector<Case>{
           {"interface x(first=Z)", "'Z' is not defined"},
           {"interface x(first=Q)", "'Q' is neither a program input nor an output"},
           {"interface x(first=A, first=B)", "role 'first' appears twice in interface 'x'"},
           {"interface x(first=A)\ninterface x(first=B)", "interface 'x' is declared twice"},
           {"interface x()", "interface 'x' declares no roles"},
       }) {
    std::string message = parse_error(with(c.statement));
    EXPECT_NE(message.find(c.expected), std::string::npos) << c.statement << " gave: " << message;
    EXPECT_NE(message.find("t.weft:"), std::string::npos) << "no location: " << message;
  }
  EXPECT_NE(parse_error(with("interface x(first=A")), "") << "an unclosed list parses";
}

}  // namespace
}  // namespace weft
