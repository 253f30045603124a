// Merging graph-defined kernels that hand each other whole tiles (search/merge_kernels.h): the
// merged µGraph is valid on the target, verified equivalent to the unmerged one, and pairs whose
// blocks do not line up are left apart.
#include <gtest/gtest.h>

#include <string>

#include "core/target.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/validate.h"
#include "search/merge_kernels.h"
#include "tests/tiers.h"
#include "verify/equivalence.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

Graph parse(const std::string& text) {
  return parse_graph(text, "<test>");
}

int kernels(const Graph& g) {
  int n = 0;
  for (const Op& op : g.ops) n += op.kind == OpKind::kernel;
  return n;
}

void expect_equivalent(const Graph& a, const Graph& b) {
  EXPECT_TRUE(check_graph(b, target_by_name("h100")).empty()) << print_graph(b, false);
  VerifyResult r = EquivalenceChecker(a, {}).check(b);
  EXPECT_EQ(r.verdict, Verdict::equivalent) << print_graph(b, false);
}

// nTrans in two parts, as the partitioned search stitches them: a residual update, then an RMS
// norm of its result, both one row per block.
const char* kTwoRowKernels = R"(
program ntrans
input H: f16[8, 256]
input X: f16[8, 256]
input A: f16[8, 256]
C = kernel(H, X, A, grid=[8], block=128, loop=1) {
after:
  h = iter(H, imap=[0])
  x = iter(X, imap=[0])
  a = iter(A, imap=[0])
  hh = sqr(h)
  m = mean(hh, dim=1)
  r = sqrt(m)
  n = div(h, r)
  d = sub(x, n)
  e = mul(a, d)
  c = sub(x, e)
  C = save(c, omap=[0])
}
O = kernel(C, X, grid=[8], block=128, loop=1) {
after:
  c = iter(C, imap=[0])
  x = iter(X, imap=[0])
  cc = sqr(c)
  m = mean(cc, dim=1)
  r = sqrt(m)
  n = div(c, r)
  o = mul(n, x)
  O = save(o, omap=[0])
}
output O
)";

TEST(MergeKernels, RowKernelsBecomeOneKernelThatLoadsSharedOperandsOnce) {
  Graph g = parse(kTwoRowKernels);
  std::vector<Graph> chain = merge_kernels(g);
  ASSERT_EQ(chain.size(), 1u);
  const Graph& merged = chain[0];
  ASSERT_EQ(kernels(merged), 1);
  const Graph& body = *merged.ops[0].body;
  int iters = 0, saves = 0;
  for (const Op& op : body.ops) {
    iters += op.kind == OpKind::iter;
    saves += op.kind == OpKind::save;
  }
  EXPECT_EQ(iters, 3) << "H, X, A, with X loaded once for both halves";
  EXPECT_EQ(saves, 1) << "C is read by nothing else: it is not written";
  expect_equivalent(g, merged);
  // The text form of the merged µGraph round-trips.
  EXPECT_EQ(parse(print_graph(merged, false)), merged);
}

TEST(MergeKernels, AResultReadElsewhereIsStillSaved) {
  std::string text = kTwoRowKernels;
  text.replace(text.find("output O"), 8, "output O\noutput C");
  Graph g = parse(text);
  std::vector<Graph> chain = merge_kernels(g);
  ASSERT_EQ(chain.size(), 1u);
  ASSERT_EQ(kernels(chain[0]), 1);
  EXPECT_EQ(chain[0].ops[0].outputs.size(), 2u);
  expect_equivalent(g, chain[0]);
}

// A matmul over a for-loop, whose rows a one-row-per-block kernel then normalizes: the loop stays,
// the norm runs after it.
TEST(MergeKernels, AKernelAfterAnotherKernelsLoopJoinsItsPostStage) {
  Graph g = parse(R"(
program mm_norm
input X: f16[8, 256]
input W: f16[256, 64]
Y = kernel(X, W, grid=[8], block=128, loop=4) {
  x = iter(X, imap=[0], fmap=1)
  w = iter(W, fmap=0)
  p = matmul(x, w)
  s = accum_sum(p)
after:
  Y = save(s, omap=[0])
}
O = kernel(Y, grid=[8], block=256, loop=1) {
after:
  y = iter(Y, imap=[0])
  yy = sqr(y)
  m = sum(yy, dim=1)
  r = sqrt(m)
  o = div(y, r)
  O = save(o, omap=[0])
}
output O
)");
  std::vector<Graph> chain = merge_kernels(g);
  ASSERT_EQ(chain.size(), 1u);
  const Graph& body = *chain[0].ops[0].body;
  EXPECT_EQ(body.loop, 4);
  EXPECT_EQ(body.threads, 256) << "the larger of the two kernels' threads per block";
  expect_equivalent(g, chain[0]);
}

TEST(MergeKernels, BlocksThatDoNotReadWhatTheSameBlockSavedStayApart) {
  // Columns saved per block, rows read per block.
  Graph cut_differently = parse(R"(
program transposed_tiles
input X: f16[8, 8]
Y = kernel(X, grid=[8], block=128, loop=1) {
after:
  x = iter(X, imap=[1])
  y = sqr(x)
  Y = save(y, omap=[1])
}
O = kernel(Y, grid=[8], block=128, loop=1) {
after:
  y = iter(Y, imap=[0])
  o = sum(y, dim=1)
  O = save(o, omap=[0])
}
output O
)");
  EXPECT_TRUE(merge_kernels(cut_differently).empty());
  // The consumer walks the producer's result in its for-loop: the tile is not whole per
  // iteration.
  Graph walked = parse(R"(
program walked
input X: f16[8, 256]
Y = kernel(X, grid=[8], block=128, loop=1) {
after:
  x = iter(X, imap=[0])
  y = sqr(x)
  Y = save(y, omap=[0])
}
O = kernel(Y, grid=[8], block=128, loop=4) {
  y = iter(Y, imap=[0], fmap=1)
  s = sum(y, dim=1)
  a = accum_sum(s)
after:
  O = save(a, omap=[0])
}
output O
)");
  EXPECT_TRUE(merge_kernels(walked).empty());
  // Another path leads from the producer to the consumer (through a pre-defined operator).
  Graph detour = parse(R"(
program detour
input X: f16[8, 256]
Y = kernel(X, grid=[8], block=128, loop=1) {
after:
  x = iter(X, imap=[0])
  y = sqr(x)
  Y = save(y, omap=[0])
}
Z = exp(Y)
O = kernel(Y, Z, grid=[8], block=128, loop=1) {
after:
  y = iter(Y, imap=[0])
  z = iter(Z, imap=[0])
  o = mul(y, z)
  O = save(o, omap=[0])
}
output O
)");
  EXPECT_TRUE(merge_kernels(detour).empty());
}

}  // namespace
}  // namespace weft
