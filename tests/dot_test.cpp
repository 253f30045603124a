// Tests of the Graphviz rendering: the hierarchy's clusters, labelled iterator and saver edges,
// and byte-for-byte determinism.
#include <gtest/gtest.h>
#include <unistd.h>

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>

#include "ir/dot.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

using L = std::vector<int64_t>;

// The fused gated MLP: a kernel whose block graph has a loop stage and a post stage holding a
// thread graph.
Graph fused_gated_mlp() {
  GraphBuilder b(Level::block);
  b.set_block_params({64, 1, 1}, 128, 16);
  ValueId X = b.add_input("X", {DType::f16, {8, 4096}});
  ValueId W1 = b.add_input("W1", {DType::f16, {4096, 4096}});
  ValueId W2 = b.add_input("W2", {DType::f16, {4096, 4096}});
  ValueId x = b.add(OpKind::iter, {X}, {{"fmap", int64_t{1}}}, "x");
  ValueId w1 = b.add(OpKind::iter, {W1}, {{"imap", L{1}}, {"fmap", int64_t{0}}}, "w1");
  ValueId w2 = b.add(OpKind::iter, {W2}, {{"imap", L{1}}, {"fmap", int64_t{0}}}, "w2");
  ValueId aa = b.add(OpKind::accum_sum, {b.add(OpKind::matmul, {x, w1}, {}, "a")}, {}, "aa");
  ValueId ba = b.add(OpKind::accum_sum, {b.add(OpKind::matmul, {x, w2}, {}, "b")}, {}, "ba");
  GraphBuilder t(Level::thread);
  ValueId taa = t.add_input("aa", b.graph().type(aa));
  ValueId tba = t.add_input("ba", b.graph().type(ba));
  t.add_output(t.add(OpKind::mul, {t.add(OpKind::silu, {taa}, {}, "s"), tba}, {}, "p"));
  ValueId y =
      b.add_nested(OpKind::thread, {aa, ba}, std::move(t).finish(), {"y"}, {}, Stage::post)[0];
  b.add(OpKind::save, {y}, {{"omap", L{1}}}, "O", {}, Stage::post);

  GraphBuilder kg(Level::kernel, "gated_mlp_fused");
  ValueId KX = kg.add_input("X", {DType::f16, {8, 4096}});
  ValueId KW1 = kg.add_input("W1", {DType::f16, {4096, 4096}});
  ValueId KW2 = kg.add_input("W2", {DType::f16, {4096, 4096}});
  auto out = kg.add_nested(OpKind::kernel, {KX, KW1, KW2}, std::move(b).finish());
  ValueId r = kg.add(OpKind::relu, {out[0]}, {}, "R");
  kg.add_output(r);
  return std::move(kg).finish();
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Position of `part` in `text` (npos-safe ordering checks).
size_t pos(const std::string& text, const std::string& part) {
  size_t p = text.find(part);
  EXPECT_NE(p, std::string::npos) << "missing: " << part;
  return p;
}

TEST(Dot, DrawsTheHierarchyAsNestedClusters) {
  std::string dot = to_dot(fused_gated_mlp());
  EXPECT_EQ(dot.rfind("digraph \"gated_mlp_fused\" {", 0), 0u) << dot;
  // Kernel cluster containing a loop cluster and a post cluster containing the thread cluster.
  size_t kernel = pos(dot, "subgraph cluster_n0 {");
  size_t loop = pos(dot, "subgraph cluster_n0_loop {");
  size_t post = pos(dot, "subgraph cluster_n0_post {");
  size_t thread = pos(dot, "subgraph cluster_n0_7 {");
  EXPECT_LT(kernel, loop);
  EXPECT_LT(loop, post);
  EXPECT_LT(post, thread);
  EXPECT_TRUE(has(dot, "label=\"kernel O: grid 64x1x1, block 128\";"));
  EXPECT_TRUE(has(dot, "label=\"for i in 0..15\";"));
  EXPECT_TRUE(has(dot, "label=\"after loop\";"));
  EXPECT_TRUE(has(dot, "label=\"thread y\";"));
  // The loop cluster holds the iterators and matmuls, the post cluster the save.
  size_t save = pos(dot, "O = save");
  EXPECT_LT(loop, pos(dot, "w1 = iter"));
  EXPECT_LT(pos(dot, "ba = accum_sum"), post);
  EXPECT_LT(post, save);

  // Iterator edges come from the kernel inputs and carry imap/fmap and the whole tensor's type.
  EXPECT_TRUE(has(dot, "nin1 -> n0_1 [label=\"imap=[1] fmap=0\\nf16[4096, 4096]\"];")) << dot;
  EXPECT_TRUE(has(dot, "nin0 -> n0_0 [label=\"imap=[-] fmap=1\\nf16[8, 4096]\"];")) << dot;
  // Tile shapes on block edges; thread-graph nodes read block values.
  EXPECT_TRUE(has(dot, "n0_0 -> n0_3 [label=\"f16[8, 256]\"];")) << dot;
  EXPECT_TRUE(has(dot, "n0_4 -> n0_7_0 [label=\"f16[8, 64]\"];")) << dot;
  // The saver edge leaves the kernel cluster with the omap and the whole output's type.
  EXPECT_TRUE(has(dot, "n0_8 -> n1 [label=\"omap=[1]\\nf16[8, 4096]\"];")) << dot;
  EXPECT_TRUE(has(dot, "n1 -> nout0 [label=\"f16[8, 4096]\"];")) << dot;
  EXPECT_EQ(dot.back(), '\n');
  EXPECT_EQ(dot.substr(dot.size() - 2), "}\n");
}

TEST(Dot, IsDeterministic) {
  std::string a = to_dot(fused_gated_mlp());
  std::string b = to_dot(fused_gated_mlp());
  EXPECT_GT(a.size(), 500u);
  EXPECT_EQ(a, b);
}

TEST(Dot, EscapesQuotesInNames) {
  GraphBuilder g(Level::kernel, "say \"hi\"");
  ValueId a = g.add_input("A", {DType::f32, {4}});
  g.add_output(g.add(OpKind::scale, {a}, {{"factor", Rational(3)}}, "B"));
  std::string dot = to_dot(std::move(g).finish());
  EXPECT_EQ(dot.rfind("digraph \"say \\\"hi\\\"\" {", 0), 0u) << dot;
  EXPECT_TRUE(has(dot, "n0 [label=\"B = scale\\nfactor=3\"];")) << dot;
}

TEST(DotCommand, WritesDotTextToStdoutOrAFile) {
  const char* env = std::getenv("WEFT_BINARY");
  std::string bin = env && *env ? env : WEFT_BINARY;
  std::string example = weft::test::source_dir() + "/examples/gated_mlp.fused.weft";
  std::string out = testing::TempDir() + "/weft_dot_test." + std::to_string(getpid()) + ".dot";
  std::string std_out =
      testing::TempDir() + "/weft_dot_test." + std::to_string(getpid()) + ".stdout";
  ASSERT_EQ(std::system(("'" + bin + "' dot '" + example + "' >'" + std_out + "'").c_str()), 0);
  ASSERT_EQ(std::system(("'" + bin + "' dot '" + example + "' -o '" + out + "'").c_str()), 0);
  auto slurp = [](const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  std::string a = slurp(std_out), b = slurp(out);
  EXPECT_EQ(a.rfind("digraph \"gated_mlp_fused\" {", 0), 0u) << a;
  EXPECT_TRUE(has(a, "subgraph cluster_n0_post {")) << a;
  EXPECT_EQ(a, b);
  // An unknown extension is a user error (exit 1).
  std::string bad =
      "'" + bin + "' dot '" + example + "' -o '" + testing::TempDir() + "/x.jpg' 2>/dev/null";
  int status = std::system(bad.c_str());
  EXPECT_EQ(WEXITSTATUS(status), 1);
}

}  // namespace
}  // namespace weft
