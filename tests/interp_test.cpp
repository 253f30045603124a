// Tests of the reference interpreter: every primitive against hand-computed values, the block-graph
// semantics on small hand-checked kernels, composite expansion, random inputs, and the examples'
// fused µGraphs against their input programs.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "interp/compare.h"
#include "interp/interpreter.h"
#include "interp/random_inputs.h"
#include "interp/real_domain.h"
#include "ir/expand_composites.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/validate.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

using T = Tensor<double>;

// 1, 2, 3, ... in row-major order.
T iota(Shape s, double start = 1) {
  T t(std::move(s), 0.0);
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = start + static_cast<double>(i);
  return t;
}

// Not all zero and not constant.
bool nontrivial(const T& t) {
  if (t.data.size() < 2) return false;
  bool any_nonzero = false, varies = false;
  for (double v : t.data) {
    any_nonzero = any_nonzero || v != 0;
    varies = varies || v != t.data[0];
  }
  return any_nonzero && varies;
}

std::vector<T> run(const std::string& text, const std::vector<T>& inputs) {
  for (const T& in : inputs) EXPECT_TRUE(nontrivial(in)) << "test input is trivial";
  Graph g = parse_graph(text, "test.weft");
  // Test programs must be valid µGraphs, or they would pin down behaviour nobody relies on.
  for (const UserError& e : check_graph(g, default_target())) ADD_FAILURE() << e.what();
  return evaluate(g, inputs, RealDomain<double>{});
}

T one(const std::string& text, const std::vector<T>& inputs) {
  auto out = run(text, inputs);
  EXPECT_EQ(out.size(), 1u);
  return out.at(0);
}

void expect_tensor(const T& got, const Shape& shape, const std::vector<double>& want) {
  ASSERT_EQ(got.shape, shape);
  ASSERT_EQ(got.data.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got.data[i], want[i], 1e-12 * std::max(1.0, std::fabs(want[i]))) << "element " << i;
}

using test::read_text;

std::string read_file(const std::string& path) {
  return read_text(path);
}
std::string example(const std::string& name) {
  return test::example_path(name);
}

// ---- Tensor helpers

TEST(Tensor, SliceAndPlaceBoxes) {
  T t = iota({3, 4});
  T s = slice_box(t, {1, 1}, {2, 2});
  expect_tensor(s, {2, 2}, {6, 7, 10, 11});
  expect_tensor(slice_dim(t, 1, 3, 1), {3, 1}, {4, 8, 12});
  T dst({3, 4}, 0.0);
  place_box(dst, s, {0, 2});
  expect_tensor(dst, {3, 4}, {0, 0, 6, 7, 0, 0, 10, 11, 0, 0, 0, 0});
  EXPECT_EQ(t.at({2, 1}), 10);
  EXPECT_THROW(slice_box(t, {2, 0}, {2, 2}), InternalError);
}

// ---- Pre-defined operators

TEST(Primitives, UnaryOpsFollowTheTable) {
  T x({1, 4}, std::vector<double>{-1.5, -0.25, 0.5, 2});
  const char* prog = R"(
input X: f32[1, 4]
output Y
)";
  auto unary = [&](const std::string& call) {
    std::string text = prog;
    text.insert(text.find("output"), "Y = " + call + "\n");
    return one(text, {x});
  };
  auto apply = [&](auto f) {
    std::vector<double> v;
    for (double e : x.data) v.push_back(f(e));
    return v;
  };
  expect_tensor(unary("exp(X)"), {1, 4}, apply([](double e) { return std::exp(e); }));
  expect_tensor(unary("sqr(X)"), {1, 4}, {2.25, 0.0625, 0.25, 4});
  expect_tensor(unary("relu(X)"), {1, 4}, {0, 0, 0.5, 2});
  expect_tensor(unary("scale(X, factor=-3/4)"), {1, 4}, {1.125, 0.1875, -0.375, -1.5});
  expect_tensor(unary("shift(X, offset=0.5)"), {1, 4}, {-1, 0.25, 1, 2.5});
  expect_tensor(unary("silu(X)"), {1, 4}, apply([](double e) { return e / (1 + std::exp(-e)); }));
  expect_tensor(unary("gelu(X)"), {1, 4},
                apply([](double e) { return 0.5 * e * (1 + std::erf(e / std::sqrt(2.0))); }));
  T sq = one("input X: f32[1, 4]\nY = sqrt(sqr(X))\noutput Y\n", {x});
  expect_tensor(sq, {1, 4}, {1.5, 0.25, 0.5, 2});
}

TEST(Primitives, BinaryOpsBroadcastSizeOneDims) {
  T a({2, 1}, std::vector<double>{1, 2});
  T b({1, 3}, std::vector<double>{10, 20, 40});
  const std::string head = "input A: f32[2, 1]\ninput B: f32[1, 3]\n";
  expect_tensor(one(head + "C = add(A, B)\noutput C\n", {a, b}), {2, 3}, {11, 21, 41, 12, 22, 42});
  expect_tensor(one(head + "C = sub(A, B)\noutput C\n", {a, b}), {2, 3},
                {-9, -19, -39, -8, -18, -38});
  expect_tensor(one(head + "C = mul(B, A)\noutput C\n", {a, b}), {2, 3}, {10, 20, 40, 20, 40, 80});
  expect_tensor(one(head + "C = div(B, A)\noutput C\n", {a, b}), {2, 3}, {10, 20, 40, 5, 10, 20});
  // Same shapes, and broadcasting of a middle dim of a rank-3 tensor.
  T c = iota({2, 2, 2});
  T d({2, 1, 2}, std::vector<double>{1, 2, 3, 4});
  expect_tensor(
      one("input C: f32[2, 2, 2]\ninput D: f32[2, 1, 2]\nE = mul(C, D)\noutput E\n", {c, d}),
      {2, 2, 2}, {1, 4, 3, 8, 15, 24, 21, 32});
}

TEST(Primitives, MatmulBroadcastsBatchDims) {
  // A: two 2x3 matrices; B: one 3x2 matrix shared by both.
  T a = iota({2, 2, 3});
  T b({1, 3, 2}, std::vector<double>{1, 0, 0, 1, 1, -1});
  T c = one("input A: f32[2, 2, 3]\ninput B: f32[1, 3, 2]\nC = matmul(A, B)\noutput C\n", {a, b});
  // Row [r0 r1 r2] -> [r0 + r2, r1 - r2].
  expect_tensor(c, {2, 2, 2}, {4, -1, 10, -1, 16, -1, 22, -1});
  // The other way round: one A, two Bs.
  T a1 = iota({1, 2, 2});
  T b2 = iota({2, 2, 2});
  T c2 =
      one("input A: f32[1, 2, 2]\ninput B: f32[2, 2, 2]\nC = matmul(A, B)\noutput C\n", {a1, b2});
  expect_tensor(c2, {2, 2, 2}, {7, 10, 15, 22, 19, 22, 43, 50});
}

TEST(Primitives, ReductionsToSizeCombineStridedGroups) {
  T x = iota({2, 4});  // [[1 2 3 4] [5 6 7 8]]
  const std::string head = "input X: f32[2, 4]\n";
  expect_tensor(one(head + "Y = sum(X, dim=1)\noutput Y\n", {x}), {2, 1}, {10, 26});
  expect_tensor(one(head + "Y = sum(X, dim=1, to=2)\noutput Y\n", {x}), {2, 2}, {4, 6, 12, 14});
  expect_tensor(one(head + "Y = mean(X, dim=1, to=2)\noutput Y\n", {x}), {2, 2}, {2, 3, 6, 7});
  expect_tensor(one(head + "Y = sum(X, dim=0)\noutput Y\n", {x}), {1, 4}, {6, 8, 10, 12});
  expect_tensor(one(head + "Y = mean(X, dim=0)\noutput Y\n", {x}), {1, 4}, {3, 4, 5, 6});
  T m({2, 4}, std::vector<double>{3, -1, 9, 2, -5, -7, 0, -2});
  expect_tensor(one(head + "Y = max(X, dim=1)\noutput Y\n", {m}), {2, 1}, {9, 0});
  expect_tensor(one(head + "Y = max(X, dim=1, to=2)\noutput Y\n", {m}), {2, 2}, {9, 2, 0, -2});
  expect_tensor(one(head + "Y = max(X, dim=0)\noutput Y\n", {m}), {1, 4}, {3, -1, 9, 2});
  // A middle dim of a rank-3 tensor.
  T z = iota({2, 4, 2});
  expect_tensor(one("input Z: f32[2, 4, 2]\nY = sum(Z, dim=1, to=2)\noutput Y\n", {z}), {2, 2, 2},
                {6, 8, 10, 12, 22, 24, 26, 28});
}

TEST(Primitives, DataMovement) {
  T x = iota({2, 3});
  const std::string head = "input X: f32[2, 3]\n";
  expect_tensor(one(head + "Y = reshape(X, shape=[3, 2])\noutput Y\n", {x}), {3, 2},
                {1, 2, 3, 4, 5, 6});
  expect_tensor(one(head + "Y = repeat(X, dim=0, times=2)\noutput Y\n", {x}), {4, 3},
                {1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6});
  expect_tensor(one(head + "Y = repeat(X, dim=1, times=2)\noutput Y\n", {x}), {2, 6},
                {1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6});
  T y = iota({2, 1}, 10);
  expect_tensor(
      one("input X: f32[2, 3]\ninput Y: f32[2, 1]\nZ = concat(Y, X, Y, dim=1)\noutput Z\n", {x, y}),
      {2, 5}, {10, 1, 2, 3, 10, 11, 4, 5, 6, 11});
  expect_tensor(one(head + "Y = concat(X, X, dim=0)\noutput Y\n", {x}), {4, 3},
                {1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6});
  auto parts = run("input X: f32[2, 6]\nA, B, C = split(X, dim=1, parts=3)\noutput C\noutput A\n",
                   {iota({2, 6})});
  ASSERT_EQ(parts.size(), 2u);
  expect_tensor(parts[0], {2, 2}, {5, 6, 11, 12});
  expect_tensor(parts[1], {2, 2}, {1, 2, 7, 8});
}

TEST(Primitives, CompositesExpandToTheirDefinitions) {
  T x({2, 2}, std::vector<double>{3, 4, 1, -1});
  T r = one("input X: f32[2, 2]\nY = rms_norm(X, eps=0.5)\noutput Y\n", {x});
  double r0 = std::sqrt((9 + 16) / 2.0 + 0.5), r1 = std::sqrt(1 + 0.5);
  expect_tensor(r, {2, 2}, {3 / r0, 4 / r0, 1 / r1, -1 / r1});
  T s = one("input X: f32[2, 2]\nY = softmax(X, dim=0)\noutput Y\n", {x});
  double c0 = std::exp(3) + std::exp(1), c1 = std::exp(4) + std::exp(-1);
  expect_tensor(s, {2, 2},
                {std::exp(3) / c0, std::exp(4) / c1, std::exp(1) / c0, std::exp(-1) / c1});
}

TEST(Primitives, InputsMustMatchTheGraph) {
  Graph g = parse_graph("input X: f32[2, 3]\nY = exp(X)\noutput Y\n", "t.weft");
  EXPECT_THROW(evaluate(g, {iota({3, 2})}, RealDomain<double>{}), UserError);
  EXPECT_THROW(evaluate(g, {}, RealDomain<double>{}), UserError);
  EXPECT_THROW(evaluate(g, {iota({2, 3}), iota({2, 3})}, RealDomain<double>{}), UserError);
}

// ---- Block graphs

TEST(BlockGraph, ImapOnTwoGridDimsAndTransposedOmap) {
  // Block (bx, by) reads rows 2bx.., cols 2by.. of X and writes them at rows 2by.., cols 2bx..
  T x = iota({4, 6});
  T y = one(R"(
input X: f32[4, 6]
Y = kernel(X, grid=[2, 3], block=32) {
after:
  x = iter(X, imap=[0, 1])
  Y = save(x, omap=[1, 0])
}
output Y
)",
            {x});
  ASSERT_EQ(y.shape, (Shape{6, 4}));
  for (int64_t bx = 0; bx < 2; ++bx)
    for (int64_t by = 0; by < 3; ++by)
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t j = 0; j < 2; ++j)
          EXPECT_EQ(y.at({2 * by + i, 2 * bx + j}), x.at({2 * bx + i, 2 * by + j}));
}

TEST(BlockGraph, ImapOnGridZAndReplicatedOperand) {
  // Grid z cuts the columns of W; X is replicated (every block sees all of it).
  T x = iota({2, 3});
  T w = iota({3, 4}, -5);
  auto g = R"(
input X: f32[2, 3]
input W: f32[3, 4]
Y = kernel(X, W, grid=[1, 1, 2], block=32) {
  x = iter(X)
  w = iter(W, imap=[-, -, 1])
  m = matmul(x, w)
  a = accum_sum(m)
after:
  Y = save(a, omap=[-, -, 1])
}
output Y
)";
  T y = one(g, {x, w});
  T ref = one("input X: f32[2, 3]\ninput W: f32[3, 4]\nY = matmul(X, W)\noutput Y\n", {x, w});
  expect_tensor(y, {2, 4}, ref.data);
}

TEST(BlockGraph, FmapWithAccumSumMatchesTheWholeReduction) {
  // Row sums of [2, 8] in 4 iterations of 2 columns; each iteration's partial sums are summed.
  T x = iota({2, 8});
  T y = one(R"(
input X: f32[2, 8]
Y = kernel(X, block=32, loop=4) {
  x = iter(X, fmap=1)
  s = sum(x, dim=1)
  a = accum_sum(s)
after:
  Y = save(a)
}
output Y
)",
            {x});
  expect_tensor(y, {2, 1}, {36, 100});
}

TEST(BlockGraph, AccumConcatPlacesIterationTiles) {
  T x = iota({2, 8});
  // Iteration i loads columns 2i, 2i+1; concatenating along dim 1 restores X, along dim 0 stacks
  // the chunks.
  auto prog = [](int dim) {
    return fmt::format(R"(
input X: f32[2, 8]
Y = kernel(X, block=32, loop=4) {{
  x = iter(X, fmap=1)
  d = scale(x, factor=2)
  c = accum_concat(d, dim={})
after:
  Y = save(c)
}}
output Y
)",
                       dim);
  };
  T along1 = one(prog(1), {x});
  std::vector<double> doubled;
  for (double v : x.data) doubled.push_back(2 * v);
  expect_tensor(along1, {2, 8}, doubled);
  T along0 = one(prog(0), {x});
  expect_tensor(along0, {8, 2}, {2, 4, 18, 20, 6, 8, 22, 24, 10, 12, 26, 28, 14, 16, 30, 32});
}

TEST(BlockGraph, AccumMaxIsElementwiseOverIterations) {
  T x({2, 6}, std::vector<double>{1, 9, -4, 2, 7, 0, -3, -8, 5, -1, -6, -2});
  T y = one(R"(
input X: f32[2, 6]
Y = kernel(X, block=32, loop=3) {
  x = iter(X, fmap=1)
  m = accum_max(x)
after:
  Y = save(m)
}
output Y
)",
            {x});
  // Element (r, c) is the max over iterations i of X[r, 2i + c].
  expect_tensor(y, {2, 2}, {7, 9, 5, -1});
}

TEST(BlockGraph, PostStageIterSeveralOutputsAndThreadOps) {
  // Y = silu(X W) * B + X W, computed over a grid of 2 column blocks and 2 contraction chunks; the
  // bias B is loaded once per block after the loop; the raw product is a second output.
  T x = iota({2, 4}, -3);
  for (double& v : x.data) v /= 4;
  T w = iota({4, 6}, -11);
  for (double& v : w.data) v /= 8;
  T b = iota({1, 6}, 2);
  auto out = run(R"(
input X: f32[2, 4]
input W: f32[4, 6]
input B: f32[1, 6]
Y, P = kernel(X, W, B, grid=[2], block=32, loop=2) {
  x = iter(X, fmap=1)
  w = iter(W, imap=[1], fmap=0)
  m = matmul(x, w)
  ma = accum_sum(m)
after:
  b = iter(B, imap=[1])
  t = thread(ma, b) {
    s = silu(ma)
    p = mul(s, b)
    q = add(p, ma)
    output q
  }
  Y = save(t, omap=[1])
  P = save(ma, omap=[1])
}
output Y
output P
)",
                 {x, w, b});
  ASSERT_EQ(out.size(), 2u);
  auto ref = run(R"(
input X: f32[2, 4]
input W: f32[4, 6]
input B: f32[1, 6]
M = matmul(X, W)
S = silu(M)
P = mul(S, B)
Y = add(P, M)
output Y
output M
)",
                 {x, w, b});
  EXPECT_TRUE(nontrivial(ref[0]) && nontrivial(ref[1]));
  expect_tensor(out[0], {2, 6}, ref[0].data);
  expect_tensor(out[1], {2, 6}, ref[1].data);
}

TEST(BlockGraph, ExampleShapedAttentionOnSmallTensors) {
  // The gqa_attention.fused structure on tiny shapes, against the input program in f64.
  const char* fused = R"(
input Q: f32[2, 4, 3]
input K: f32[2, 3, 16]
input V: f32[2, 16, 3]
OP, DP = kernel(Q, K, V, grid=[2, 2], block=32, loop=4) {
  q = iter(Q, imap=[0])
  k = iter(K, imap=[0, 2], fmap=2)
  v = iter(V, imap=[0, 1], fmap=1)
  s = matmul(q, k)
  e = exp(s)
  d = sum(e, dim=2)
  da = accum_sum(d)
  o = matmul(e, v)
  oa = accum_sum(o)
after:
  OP = save(oa, omap=[0, 2])
  DP = save(da, omap=[0, 2])
}
O4 = reshape(OP, shape=[2, 4, 2, 3])
OS = sum(O4, dim=2)
ON = reshape(OS, shape=[2, 4, 3])
DS = sum(DP, dim=2)
O = div(ON, DS)
output O
)";
  const char* plain = R"(
input Q: f32[2, 4, 3]
input K: f32[2, 3, 16]
input V: f32[2, 16, 3]
O = matmul(softmax(matmul(Q, K)), V)
output O
)";
  Graph g = parse_graph(fused, "f.weft");
  auto in = random_inputs(g, 5);
  T a = one(fused, in), b = one(plain, in);
  EXPECT_TRUE(nontrivial(b));
  Comparison c = compare_outputs(a, b, false);
  EXPECT_TRUE(c.ok) << c.scaled_error;
}

// ---- Value domains

// Doubles without the matmul fast path, recording the size of every group given to reduce_max.
struct RecordingDomain {
  using Value = double;
  std::vector<size_t>* max_groups;
  Value constant(const Rational& r) const { return r.to_double(); }
  Value add(Value a, Value b) const { return a + b; }
  Value mul(Value a, Value b) const { return a * b; }
  auto elementwise(OpKind k, const Attrs& attrs) const {
    return [k, &attrs](Value a, Value b) {
      if (k == OpKind::div && b == 0) throw std::domain_error("zero divisor");
      return real_value(op_info(k), attrs, a, b);
    };
  }
  Value reduce_max(std::span<const Value> g) const {
    max_groups->push_back(g.size());
    return *std::max_element(g.begin(), g.end());
  }
};
static_assert(ValueDomain<RecordingDomain> && !HasMatmul<RecordingDomain>);

TEST(Domains, GenericMatmulAgreesWithTheFastPath) {
  Graph g = parse_graph(
      "input A: f32[2, 5, 7]\ninput B: f32[2, 7, 3]\nC = matmul(A, B)\noutput C\n", "t.weft");
  auto in = random_inputs(g, 11);
  std::vector<size_t> groups;
  auto slow = evaluate(g, in, RecordingDomain{&groups});
  auto fast = evaluate(g, in, RealDomain<double>{});
  EXPECT_TRUE(nontrivial(fast[0]));
  expect_tensor(slow[0], fast[0].shape, fast[0].data);
  // The blocked fast path, on sizes that are not multiples of its blocks.
  T a = random_tensor({37, 300}, 1, 0), b = random_tensor({300, 529}, 1, 1);
  T c({37, 529}, 0.0);
  RealDomain<double>{}.matmul(a.data.data(), b.data.data(), c.data.data(), 37, 300, 529);
  for (int64_t i : {0, 17, 36})
    for (int64_t j : {0, 263, 511, 528}) {
      double want = 0;
      for (int64_t k = 0; k < 300; ++k) want += a.at({i, k}) * b.at({k, j});
      EXPECT_NEAR(c.at({i, j}), want, 1e-12);
    }
}

TEST(Domains, MaxGetsWholeGroupsAndDomainErrorsPropagate) {
  std::vector<size_t> groups;
  RecordingDomain d{&groups};
  Graph g = parse_graph(R"(
input X: f32[2, 6]
Y = kernel(X, block=32, loop=3) {
  x = iter(X, fmap=1)
  m = accum_max(x)
after:
  Y = save(m)
}
Z = max(X, dim=1, to=2)
output Y
output Z
)",
                        "t.weft");
  auto out = evaluate(g, {iota({2, 6})}, d);
  // accum_max: 4 elements, each over 3 iterations; max: 4 groups of 3.
  EXPECT_EQ(groups, (std::vector<size_t>{3, 3, 3, 3, 3, 3, 3, 3}));
  expect_tensor(out[0], {2, 2}, {5, 6, 11, 12});
  expect_tensor(out[1], {2, 2}, {5, 6, 11, 12});
  Graph h = parse_graph("input X: f32[1, 2]\nY = div(X, X)\noutput Y\n", "t.weft");
  EXPECT_THROW(evaluate(h, {T({1, 2}, std::vector<double>{1, 0})}, d), std::domain_error);
}

// ---- Composite expansion

TEST(ExpandComposites, RmsNormLinearGolden) {
  Graph g = parse_graph(read_file(example("rms_norm_linear.weft")), "rms_norm_linear.weft");
  Graph e = expand_composites(g);
  EXPECT_EQ(print_graph(e, false), R"(program rms_norm_linear
input X: f16[16, 4096]
input W: f16[4096, 6144]
N.1 = sqr(X)
N.2 = mean(N.1, dim=1)
N.3 = shift(N.2, offset=1e-6)
N.4 = sqrt(N.3)
N = div(X, N.4)
O = matmul(N, W)
output O
)");
  // Expansion is idempotent and keeps graphs without composites as they are.
  EXPECT_TRUE(expand_composites(e) == e);
}

TEST(ExpandComposites, FreshNamesAvoidExistingOnesAndEpsZeroHasNoShift) {
  Graph g = parse_graph(R"(
input X: f32[4, 8]
S.1 = exp(X)
S = softmax(S.1, dim=0)
R = rms_norm(S, dim=1)
output R
output S
)",
                        "t.weft");
  Graph e = expand_composites(g);
  std::vector<std::string> ops;
  for (const Op& op : e.ops)
    ops.push_back(std::string(op_info(op.kind).name) + " " + e.value(op.outputs[0]).name);
  EXPECT_EQ(ops, (std::vector<std::string>{"exp S.1", "exp S.2", "sum S.3", "div S", "sqr R.1",
                                           "mean R.2", "sqrt R.3", "div R"}));
  EXPECT_EQ(e.value(e.outputs[0]).name, "R");
  EXPECT_EQ(e.value(e.outputs[1]).name, "S");
  EXPECT_EQ(e.ops[2].attrs.get_int("dim"), 0);
}

// ---- Random inputs

TEST(RandomInputs, DeterministicUniformAndIndependentPerInput) {
  // mt19937_64 is fully specified, so these values are the same on every platform.
  T t = random_tensor({4}, 0, 0);
  EXPECT_DOUBLE_EQ(t.data[0], -0.035857706971400338);
  EXPECT_DOUBLE_EQ(t.data[1], -0.80472955792522338);
  T u = random_tensor({2}, 7, 3);
  EXPECT_DOUBLE_EQ(u.data[1], 0.36607315852073241);
  T big = random_tensor({10000}, 42, 0);
  double mn = 1, mx = -1, sum = 0;
  for (double v : big.data) {
    mn = std::min(mn, v);
    mx = std::max(mx, v);
    sum += v;
  }
  EXPECT_GE(mn, -1.0);
  EXPECT_LT(mx, 1.0);
  EXPECT_LT(mn, -0.99);
  EXPECT_GT(mx, 0.99);
  EXPECT_NEAR(sum / 10000, 0.0, 0.03);
  Graph g = parse_graph("input A: f32[3, 3]\ninput B: f32[3, 3]\nC = add(A, B)\noutput C\n", "t");
  auto in = random_inputs(g, 9);
  EXPECT_NE(in[0].data, in[1].data);
  EXPECT_EQ(in[1].data, random_tensor({3, 3}, 9, 1).data);
  EXPECT_NE(random_inputs(g, 10)[0].data, in[0].data);
}

TEST(Compare, ToleranceIsRelativeToTheLargestReferenceMagnitude) {
  T ref({1, 4}, std::vector<double>{100, -50, 0.001, 3});
  T got = ref;
  got.data[2] += 0.009;  // 9e-5 of max |ref|: a huge relative error on a tiny element is fine
  Comparison c = compare_outputs(got, ref, true);
  EXPECT_TRUE(c.ok) << c.scaled_error;
  EXPECT_NEAR(c.scaled_error, 9e-5, 1e-12);
  EXPECT_FALSE(compare_outputs(got, ref, false).ok);
  got.data[1] += 0.02;  // now 2e-4 of max |ref|
  EXPECT_FALSE(compare_outputs(got, ref, true).ok);
  EXPECT_NEAR(compare_outputs(got, ref, true).max_rel_error, 4e-4, 1e-12);
  got = ref;
  got.data[0] = std::nan("");
  EXPECT_FALSE(compare_outputs(got, ref, true).ok);
  EXPECT_FALSE(compare_outputs(T({4, 1}, ref.data), ref, true).ok);
  EXPECT_TRUE(compare_outputs(ref, ref, false).ok);
}

// ---- Acceptance: the examples' fused µGraphs match their input programs

class ExamplePair : public ::testing::TestWithParam<const char*> {};

TEST_P(ExamplePair, FusedMatchesInputProgramInF32) {
  std::string name = GetParam();
  Graph fused = parse_graph(read_file(example(name + ".fused.weft")), name + ".fused.weft");
  Graph plain = parse_graph(read_file(example(name + ".weft")), name + ".weft");
  auto inputs = random_inputs(plain, 2026);
  ASSERT_EQ(inputs.size(), fused.inputs.size());
  for (const T& in : inputs) ASSERT_TRUE(nontrivial(in));
  auto got = evaluate_real(fused, inputs, true);
  auto want = evaluate_real(plain, inputs, true);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(nontrivial(want[i]));
    ASSERT_TRUE(nontrivial(got[i]));
    Comparison c = compare_outputs(got[i], want[i], true);
    EXPECT_TRUE(c.ok) << name << " output " << i << ": scaled error " << c.scaled_error
                      << ", max abs error " << c.max_abs_error;
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, ExamplePair,
                         ::testing::Values("rms_norm_linear", "gated_mlp", "gqa_attention"));

// ---- `weft run`

std::string write_temp(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "." + name;
  std::ofstream(path) << text;
  return path;
}

int weft_exit_code(const std::string& args, std::string* output = nullptr) {
  std::string out_path =
      ::testing::TempDir() + "/weft_run_out." + std::to_string(getpid()) + ".txt";
  std::string cmd = std::string(WEFT_BINARY) + " " + args + " > " + out_path + " 2>&1";
  int status = std::system(cmd.c_str());
  if (output) *output = read_file(out_path);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(WeftRun, SummarizesAndCompares) {
  const std::string head = "input X: f32[4, 8]\ninput W: f32[8, 6]\n";
  std::string a = write_temp("run_a.weft", head + "Y = matmul(rms_norm(X), W)\noutput Y\n");
  std::string b = write_temp("run_b.weft", head + R"(
Y = kernel(X, W, grid=[2], block=32, loop=2) {
  x = iter(X, fmap=1)
  w = iter(W, imap=[1], fmap=0)
  s = sum(sqr(x), dim=1)
  sa = accum_sum(s)
  m = matmul(x, w)
  ma = accum_sum(m)
after:
  y = div(ma, sqrt(scale(sa, factor=1/8)))
  Y = save(y, omap=[1])
}
output Y
)");
  std::string c = write_temp("run_c.weft", head + "Y = matmul(X, W)\noutput Y\n");
  std::string d = write_temp("run_d.weft",
                             "input X: f32[4, 8]\ninput W: f32[8, 5]\n"
                             "Y = matmul(X, W)\noutput Y\n");
  std::string out;
  ASSERT_EQ(weft_exit_code("run " + a + " --seed 3", &out), 0) << out;
  EXPECT_NE(out.find("output Y: f32[4, 6]"), std::string::npos) << out;
  EXPECT_NE(out.find("checksum"), std::string::npos) << out;
  std::string again;
  weft_exit_code("run " + a + " --seed 3", &again);
  EXPECT_EQ(out, again);
  EXPECT_EQ(weft_exit_code("run " + b + " --compare " + a, &out), 0) << out;
  EXPECT_NE(out.find("within tolerance"), std::string::npos) << out;
  EXPECT_EQ(weft_exit_code("run " + b + " --compare " + a + " --dtype f64", &out), 0) << out;
  EXPECT_EQ(weft_exit_code("run " + c + " --compare " + a, &out), 3) << out;
  EXPECT_NE(out.find("OUTSIDE TOLERANCE"), std::string::npos) << out;
  EXPECT_EQ(weft_exit_code("run " + d + " --compare " + a, &out), 1) << out;
  EXPECT_NE(out.find("cannot compare"), std::string::npos) << out;
}

}  // namespace
}  // namespace weft
