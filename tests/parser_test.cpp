// Tests of the µGraph text parser: the examples, flattening of nested calls, comments, and the
// located messages of common mistakes; the `interface` statement through graph and plan text.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

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

std::string read_file(const std::filesystem::path& p) {
  return test::read_text(p.string());
}

std::vector<std::filesystem::path> example_files() {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(weft::test::source_dir() + "/examples"))
    if (e.path().extension() == ".weft") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

// The message of the UserError that parsing `text` throws ("" if none).
std::string parse_error(const std::string& text) {
  try {
    parse_graph(text, "t.weft");
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(Parser, EveryExampleParses) {
  auto files = example_files();
  ASSERT_GE(files.size(), 6u);
  for (const auto& f : files) {
    Graph g;
    ASSERT_NO_THROW(g = parse_graph(read_file(f), f.string())) << f;
    EXPECT_FALSE(g.ops.empty()) << f;
    EXPECT_FALSE(g.outputs.empty()) << f;
  }
}

TEST(Parser, FusedRmsNormLinearHasTheExpectedStructure) {
  std::string path = weft::test::source_dir() + "/examples/rms_norm_linear.fused.weft";
  Graph g = parse_graph(read_file(path), path);
  EXPECT_EQ(g.name, "rms_norm_linear_fused");
  ASSERT_EQ(g.inputs.size(), 2u);
  ASSERT_EQ(g.ops.size(), 1u);
  const Op& k = g.ops[0];
  EXPECT_EQ(k.kind, OpKind::kernel);
  ASSERT_TRUE(k.body);
  const Graph& b = *k.body;
  EXPECT_EQ(b.level, Level::block);
  EXPECT_EQ(b.grid, (std::array<int64_t, 3>{96, 1, 1}));
  EXPECT_EQ(b.loop, 16);
  EXPECT_EQ(b.threads, 128);
  EXPECT_EQ(b.value(b.inputs[0]).name, "X");
  int loop_ops = 0, post_ops = 0;
  for (const Op& op : b.ops) (op.stage == Stage::loop ? loop_ops : post_ops)++;
  EXPECT_EQ(loop_ops, 7);
  EXPECT_EQ(post_ops, 5);
  EXPECT_EQ(g.type(g.outputs[0]).shape, (Shape{16, 6144}));
  EXPECT_EQ(g.type(g.outputs[0]).dtype, DType::f16);
  EXPECT_EQ(b.ops[1].attrs.get_list("imap"), (std::vector<int64_t>{1, -1, -1}));
  EXPECT_EQ(b.ops[1].attrs.get_int("fmap"), 0);
}

TEST(Parser, NestedCallsAreFlattenedInnermostFirstLeftToRight) {
  Graph g = parse_graph(
      "input a: f32[4, 8]\n"
      "input b: f32[4, 8]\n"
      "y = add(exp(sqr(a)), relu(b))\n"
      "output y\n",
      "t.weft");
  ASSERT_EQ(g.ops.size(), 4u);
  EXPECT_EQ(g.ops[0].kind, OpKind::sqr);
  EXPECT_EQ(g.value(g.ops[0].outputs[0]).name, "y.1");
  EXPECT_EQ(g.ops[1].kind, OpKind::exp);
  EXPECT_EQ(g.value(g.ops[1].outputs[0]).name, "y.2");
  EXPECT_EQ(g.ops[2].kind, OpKind::relu);
  EXPECT_EQ(g.value(g.ops[2].outputs[0]).name, "y.3");
  EXPECT_EQ(g.ops[3].kind, OpKind::add);
  EXPECT_EQ(g.ops[3].inputs, (std::vector<ValueId>{g.find("y.2"), g.find("y.3")}));
  // The printer prints the flat form, which parses to the same graph.
  EXPECT_EQ(parse_graph(print_graph(g), "p.weft"), g);
}

TEST(Parser, CommentsBlankLinesAndCrlfAreIgnored) {
  Graph a = parse_graph(
      "# header\r\n\r\ninput x: f16[2, 3]   # the input\r\ny = exp(x)#c\r\noutput y\r\n", "t.weft");
  Graph b = parse_graph("input x: f16[2, 3]\ny = exp(x)\noutput y", "t.weft");
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.ops.size(), 1u);
}

TEST(Parser, AttributesOfEveryKind) {
  Graph g = parse_graph(
      "program attrs\n"
      "input x: bf16[4, 8]\n"
      "s = scale(x, factor=1/4096)\n"
      "t = shift(s, offset=-2.5e-3)\n"
      "r = reshape(t, shape=[2, 16])\n"
      "m = sum(r, dim=-1, to=4)\n"
      "n = rms_norm(x, eps=1e-6)\n"
      "output m, n\n",
      "t.weft");
  EXPECT_EQ(g.name, "attrs");
  EXPECT_EQ(g.ops[0].attrs.get_rational("factor"), *Rational::parse("1/4096"));
  EXPECT_EQ(g.ops[1].attrs.get_rational("offset"), *Rational::parse("-0.0025"));
  EXPECT_EQ(g.ops[2].attrs.get_list("shape"), (std::vector<int64_t>{2, 16}));
  EXPECT_EQ(g.ops[3].attrs.get_int("dim"), 1);  // normalized
  EXPECT_EQ(g.type(g.find("m")).shape, (Shape{2, 4}));
  EXPECT_EQ(g.outputs.size(), 2u);
  std::string text = print_graph(g, false);
  EXPECT_NE(text.find("m = sum(r, dim=1, to=4)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("n = rms_norm(x, dim=1, eps=1e-6)\n"), std::string::npos) << text;
}

struct ErrorCase {
  const char* text;
  const char* expected;  // substring of "t.weft:line:col: error: message"
};

TEST(Parser, ErrorsAreLocatedAndSayWhatWasExpected) {
  const ErrorCase cases[] = {
      {"input X: f16[8, 64]\ninput W1: f16[64, 64]\ninput W2: f16[64, 64]\nA = matmul(X, W1 W2)\n",
       "t.weft:4:18: error: expected ')' after the operands of 'matmul', found 'W2'"},
      {"input X: f16[8, 64]\nA = matmull(X, X)\n",
       "t.weft:2:5: error: unknown operator 'matmull' (did you mean 'matmul'?)"},
      {"input X: f16[8, 64]\nA = exp(Y)\n", "t.weft:2:9: error: 'Y' is not defined"},
      {"input X: f16[8, 64]\ninput W: f16[64, 64]\nO = kernel(W, grid=[1]) {\n  x = iter(X)\n",
       "t.weft:4:12: error: 'X' is not an operand of this kernel; pass it in kernel(...)"},
      {"input X: f16[8, 64]\nA = exp(X)\nA = sqr(X)\n",
       "t.weft:3:1: error: 'A' is already defined (at line 2)"},
      {"input X: f16[8, 64]\nA = matmul(X, X)\n",
       "t.weft:2:5: error: matmul: matmul contraction mismatch"},
      {"input X: f16[8, 64]\nA = sum(X, dim=1, foo=2)\n",
       "t.weft:2:19: error: 'sum' has no attribute 'foo'"},
      {"input X: f16[8, 64]\nA = sum(X, dim=x)\n",
       "t.weft:2:16: error: expected the value of 'dim' (an integer), found 'x'"},
      {"input X: q16[8, 64]\n", "t.weft:1:10: error: unknown element type 'q16'"},
      {"input X: f16[8, 64]\nA = exp(X) $\n", "t.weft:2:12: error: unexpected character '$'"},
      {"input X: f16[8, 99999999999999999999]\n",
       "t.weft:1:17: error: integer 99999999999999999999 is too large"},
      {"input X: f16[8, 64]\nA = exp(X)\ninput Y: f16[8]\n",
       "t.weft:3:1: error: inputs must be declared before"},
      {"input X: f16[8, 64]\nO = kernel(X, grid=[2], loop=1) {\n  x = iter(X, imap=[0])\nafter:\n  "
       "P = save(x, omap=[0])\n}\n",
       "t.weft:5:3: error: 'P' is not a result of this kernel"},
      {"input X: f16[8, 64]\nO, P = kernel(X, grid=[1]) {\n  x = iter(X)\nafter:\n  P = save(x)\n  "
       "O = save(x)\n}\n",
       "t.weft:5:7: error: save number 1 is named 'P'"},
      {"input X: f16[8, 64]\nO = kernel(X) {\n  x = iter(X)\n",
       "t.weft:4:1: error: expected '}' to close the kernel body, found end of file"},
      {"input X: f16[8]\nA = "
       "exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp("
       "exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp("
       "exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(exp(X))"
       "))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))\n",
       "error: calls are nested too deeply"},
      {"input X: f32[65536, 65536, 65536, 2]\n",
       "t.weft:1:36: error: tensor type f32[65536, 65536, 65536, 2] has more than"},
      {"input X: f16[8, 64]\nA, B = split(X, dim=1, parts=3)\n",
       "t.weft:2:8: error: split into 3 parts needs 3 names"},
      {"input X: f16[8, 64]\nA = split(sqr(X), dim=1, parts=1)\nB = add(split(X, dim=0, parts=2), "
       "X)\n",
       "t.weft:3:9: error: split into 2 parts needs 2 names on the left of '=', got 1"},
      {"", ""},  // an empty file is an empty program (the checker rejects it)
  };
  for (const ErrorCase& c : cases) {
    std::string err = parse_error(c.text);
    if (c.expected[0] == '\0') {
      EXPECT_EQ(err, "") << c.text;
      continue;
    }
    EXPECT_NE(err.find(c.expected), std::string::npos) << "input:\n" << c.text << "\ngot: " << err;
  }
}

TEST(Parser, ThreadGraphsAndStages) {
  std::string path = weft::test::source_dir() + "/examples/gated_mlp.fused.weft";
  Graph g = parse_graph(read_file(path), path);
  const Graph& b = *g.ops[0].body;
  const Op* thread = nullptr;
  for (const Op& op : b.ops)
    if (op.kind == OpKind::thread) thread = &op;
  ASSERT_NE(thread, nullptr);
  EXPECT_EQ(thread->stage, Stage::post);
  EXPECT_EQ(thread->body->level, Level::thread);
  EXPECT_EQ(thread->body->ops.size(), 2u);
  EXPECT_EQ(thread->body->value(thread->body->outputs[0]).name, "p");
  EXPECT_EQ(b.value(thread->outputs[0]).name, "y");
  EXPECT_EQ(b.ops[0].stage, Stage::loop);
}

// The `interface NAME(...)` statement: its text round-trips through the graph and the plan, and a
// malformed or dangling declaration is refused at its line and column.
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
