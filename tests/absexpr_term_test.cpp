// Unit tests of abstract-expression terms (store, printer, parser) and of their construction from
// µGraphs (the notes' table, inlining of kernels and thread graphs, composites).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "absexpr/of_graph.h"
#include "absexpr/term.h"
#include "ir/expand_composites.h"
#include "ir/parser.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");
WEFT_TEST_TIERS_OF("AbsexprTermStore.*", "tsan");

namespace weft {
namespace {

Graph load_example(const std::string& name) {
  return test::load_graph_file(test::example_path(name));
}

TEST(AbsexprTermStore, HashConsesAndNormalizesSingleElementReductions) {
  TermStore s;
  TermId x = s.var("X"), w = s.var("W");
  EXPECT_NE(x, w);
  EXPECT_EQ(s.var("X"), x);
  EXPECT_EQ(s.mul(x, w), s.mul(x, w));
  EXPECT_NE(s.mul(x, w), s.mul(w, x));  // terms are syntactic; A_eq lives in the oracle
  EXPECT_EQ(s.sum(1, x), x);
  EXPECT_EQ(s.max(1, x), x);
  EXPECT_NE(s.sum(2, x), s.sum(4, x));
  EXPECT_NE(s.sum(2, x), s.max(2, x));
  EXPECT_EQ(s.tree_size(s.add(s.mul(x, x), s.cst())), 5u);
}

TEST(AbsexprTermStore, PrintsAndParsesSexprs) {
  TermStore s;
  for (const char* text :
       {"X", "(const)", "(add X W)", "(sum 4096 (mul X W))", "(div (exp X) (sum 64 (exp X)))",
        "(max 16 (relu (gelu (silu (sqrt X)))))", "(cat X (mul X' W_2))"}) {
    TermId t = s.parse(text);
    EXPECT_EQ(s.str(t), text);
    EXPECT_EQ(s.parse(s.str(t)), t);
  }
  EXPECT_EQ(s.parse("  ( add   X\n W ) "), s.parse("(add X W)"));
  EXPECT_EQ(s.parse("(sum 1 X)"), s.var("X"));
  for (const char* bad : {"", "(", "(add X)", "(add X W W)", "(sum X)", "(sum 0 X)", "(sum -3 X)",
                          "(foo X)", "X Y", "(exp X", "4096", "(sum 99999999999999999999 X)"}) {
    EXPECT_THROW(s.parse(bad), UserError) << bad;
  }
}

TEST(AbsexprTermStore, ConcurrentCreationGivesOneIdPerTerm) {
  TermStore s;
  constexpr int kThreads = 4;
  std::vector<std::vector<TermId>> ids(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        TermId x = s.var(fmt::format("V{}", i % 37));
        ids[static_cast<size_t>(t)].push_back(s.sum(2 + i % 50, s.mul(x, s.fn(OpKind::exp, x))));
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 1; t < kThreads; ++t) EXPECT_EQ(ids[static_cast<size_t>(t)], ids[0]);
  // 37 variables, 37 exps, 37 muls and one sum per distinct (i mod 37, i mod 50): no duplicates.
  EXPECT_EQ(s.size(), 37u * 3 + 1850u);
}

TEST(AbsexprOfGraph, RmsNormLinearMatchesTheNotesTable) {
  TermStore s;
  Graph in = load_example("rms_norm_linear.weft");
  Graph fused = load_example("rms_norm_linear.fused.weft");
  EXPECT_EQ(s.str(abstract_outputs(in, s).at(0)),
            "(sum 4096 (mul (div X (sqrt (add (sum 4096 (mul X X)) (const)))) W))");
  EXPECT_EQ(s.str(abstract_outputs(fused, s).at(0)),
            "(div (sum 16 (sum 256 (mul X W))) (sqrt (add (sum 16 (sum 256 (mul X X))) "
            "(const))))");
}

TEST(AbsexprOfGraph, CompositesAgreeWithTheirExpansion) {
  for (const char* name : {"rms_norm_linear.weft", "gated_mlp.weft", "gqa_attention.weft"}) {
    TermStore s;
    Graph g = load_example(name);
    EXPECT_EQ(abstract_outputs(g, s), abstract_outputs(expand_composites(g), s)) << name;
  }
  // softmax has no example file: build one.
  GraphBuilder b(Level::kernel, "sm");
  ValueId x = b.add_input("X", {DType::f32, {8, 32}});
  b.add_output(b.add(OpKind::softmax, {x}));
  Graph g = std::move(b).finish();
  TermStore s;
  EXPECT_EQ(s.str(abstract_outputs(g, s).at(0)), "(div (exp X) (sum 32 (exp X)))");
  EXPECT_EQ(abstract_outputs(g, s), abstract_outputs(expand_composites(g), s));
}

TEST(AbsexprOfGraph, InlinesKernelsAndThreadGraphs) {
  TermStore s;
  Graph g = load_example("gated_mlp.fused.weft");
  EXPECT_EQ(s.str(abstract_outputs(g, s).at(0)),
            "(mul (silu (sum 16 (sum 256 (mul X W1)))) (sum 16 (sum 256 (mul X W2))))");
  Graph a = load_example("gqa_attention.fused.weft");
  EXPECT_EQ(s.str(abstract_outputs(a, s).at(0)),
            "(div (sum 16 (sum 4 (sum 64 (mul (exp (sum 64 (mul Q K))) V)))) "
            "(sum 16 (sum 4 (sum 64 (exp (sum 64 (mul Q K)))))))");
}

TEST(AbsexprOfGraph, MovementReductionsAndConstants) {
  GraphBuilder b(Level::kernel, "misc");
  ValueId x = b.add_input("X", {DType::f32, {8, 32}});
  ValueId y = b.add_input("Y", {DType::f32, {8, 32}});
  ValueId r = b.add(OpKind::reshape, {x}, {{"shape", std::vector<int64_t>{4, 64}}});
  ValueId m = b.add(OpKind::mean, {r}, {{"dim", int64_t{1}}, {"to", int64_t{4}}});
  ValueId mx = b.add(OpKind::max, {x}, {{"dim", int64_t{0}}});
  ValueId sc = b.add(OpKind::scale, {x}, {{"factor", Rational(3)}});
  ValueId sh0 = b.add(OpKind::shift, {x}, {{"offset", Rational(0)}});
  ValueId sh = b.add(OpKind::shift, {x}, {{"offset", Rational(2)}});
  ValueId sub = b.add(OpKind::sub, {x, y});
  ValueId sq = b.add(OpKind::sqr, {y});
  ValueId c1 = b.add(OpKind::concat, {x, x}, {{"dim", int64_t{0}}});
  ValueId c2 = b.add(OpKind::concat, {x, y}, {{"dim", int64_t{0}}});
  for (ValueId v : {m, mx, sc, sh0, sh, sub, sq, c1, c2}) b.add_output(v);
  Graph g = std::move(b).finish();
  TermStore s;
  std::vector<std::string> got;
  for (TermId t : abstract_outputs(g, s)) got.push_back(s.str(t));
  std::vector<std::string> want = {"(sum 16 X)", "(max 8 X)", "X", "X",        "(add X (const))",
                                   "(add X Y)",  "(mul Y Y)", "X", "(cat X Y)"};
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace weft
