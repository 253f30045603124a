// Tests of the baseline rules (search/baselines.h) and rule-built kernels (search/fuse_region.h):
// each rule's regions on a program it applies to, the row-scale rewrite, and every baseline of
// small programs valid on the target and proven equivalent to its program.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "cost/cost_model.h"
#include "ir/expand_composites.h"
#include "ir/printer.h"
#include "ir/validate.h"
#include "search/baselines.h"
#include "search/fuse_region.h"
#include "tests/test_util.h"
#include "tests/tiers.h"
#include "verify/equivalence.h"

WEFT_TEST_TIERS("unit");
// Minutes under ASan at -O0 (runs in the optimized build: make test-heavy).
WEFT_TEST_TIERS_OF("FuseRegion.SplitsTheLoopWhenTheGridLeavesSMsIdle", "heavy");

namespace weft {
namespace {

Graph load_data(const std::string& name) {
  return expand_composites(test::load_graph_file(test::source_path("tests/data/" + name)));
}

// The names of the values the ops of `region` define.
std::set<std::string> defined(const Graph& g, const std::vector<int>& region) {
  std::set<std::string> out;
  for (int i : region)
    for (ValueId v : g.ops[i].outputs) out.insert(g.value(v).name);
  return out;
}

bool has_region(const Graph& g, const std::vector<std::vector<int>>& regions,
                const std::set<std::string>& names) {
  for (const auto& r : regions)
    if (defined(g, r) == names) return true;
  return false;
}

int count_kernels(const Graph& g) {
  int n = 0;
  for (const Op& op : g.ops) n += op.kind == OpKind::kernel;
  return n;
}

void expect_equivalent(const Graph& program, const Graph& candidate, const std::string& what) {
  ASSERT_TRUE(check_graph(candidate, target_by_name("h100")).empty()) << what;
  VerifyResult v = verify_equivalent(program, candidate);
  EXPECT_EQ(v.verdict, Verdict::equivalent) << what << ": " << v.message << "\n"
                                            << print_graph(candidate);
  ASSERT_TRUE(v.floats.has_value()) << what;
  EXPECT_TRUE(v.floats->acceptable) << what;
}

TEST(BaselineRules, ChainsGroupConnectedElementwiseOperatorsAndReductions) {
  Graph g = load_data("mlp_block_small.weft");
  auto regions = baseline_regions(g, "chains");
  // The expanded rms_norm (sqr, mean, shift, sqrt, div) and silu·mul; the residual add is alone.
  std::set<std::string> norm;
  for (const Op& op : g.ops)
    if (op.kind != OpKind::matmul && g.value(op.outputs[0]).name.rfind("N", 0) == 0)
      norm.insert(g.value(op.outputs[0]).name);
  ASSERT_EQ(norm.size(), 5u);
  EXPECT_TRUE(has_region(g, regions, norm));
  EXPECT_TRUE(has_region(g, regions, {"S", "M"}));
  for (const auto& r : regions)
    for (int i : r) EXPECT_NE(g.ops[i].kind, OpKind::matmul);
  EXPECT_EQ(regions.size(), 2u);
}

TEST(BaselineRules, MatmulEpiloguesTakeElementwiseConsumersAndProducers) {
  Graph g = load_data("mlp_block_small.weft");
  auto regions = baseline_regions(g, "matmul-epilogues");
  // A = N W1 with silu and the product as epilogue; D = M W2 with the residual add, and with
  // its prologue silu·mul (only D reads M, only M reads S) — and not the rms_norm's reductions.
  EXPECT_TRUE(has_region(g, regions, {"A", "S", "M"}));
  EXPECT_TRUE(has_region(g, regions, {"D", "O"}));
  EXPECT_TRUE(has_region(g, regions, {"S", "M", "D"}));
  EXPECT_TRUE(has_region(g, regions, {"S", "M", "D", "O"}));
  for (const auto& r : regions)
    for (int i : r) EXPECT_NE(op_info(g.ops[i].kind).op_class, OpClass::reduction);
}

TEST(BaselineRules, HoistRowScalesMovesANormalisationPastTheMatmul) {
  Graph g = load_data("rms_norm_linear_small.weft");
  Graph h = hoist_row_scales(g);
  ASSERT_FALSE(h == g);
  // The matmul now reads X itself, and the division comes after it.
  const Op& last = h.ops.back();
  EXPECT_EQ(last.kind, OpKind::div);
  EXPECT_EQ(h.value(last.outputs[0]).name, "O");
  int matmuls_of_x = 0;
  for (const Op& op : h.ops)
    matmuls_of_x += op.kind == OpKind::matmul && h.value(op.inputs[0]).name == "X";
  EXPECT_EQ(matmuls_of_x, 1);
  expect_equivalent(g, h, "hoisted rms_norm_linear");
  // Attention: the softmax's division moves past P V.
  Graph a = load_data("attention_small.weft");
  Graph ah = hoist_row_scales(a);
  EXPECT_EQ(ah.ops.back().kind, OpKind::div);
  expect_equivalent(a, ah, "hoisted attention");
  // Nothing to move: a matmul of plain inputs, or a scale that varies along the contraction.
  Graph lora = load_data("lora_small.weft");
  EXPECT_TRUE(hoist_row_scales(lora) == lora);
  Graph ln = load_data("layer_norm_small.weft");
  EXPECT_TRUE(hoist_row_scales(ln) == ln);
}

TEST(BaselineRules, MatmulClosuresAfterHoistingTakeTheWholeNormalisation) {
  Graph h = hoist_row_scales(
      expand_composites(test::load_graph_file(test::example_path("rms_norm_linear.weft"))));
  auto regions = baseline_regions(h, "matmul-closures");
  std::vector<int> all(h.ops.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  EXPECT_NE(std::find(regions.begin(), regions.end(), all), regions.end());
  // At the example's size (X 16 x 4096) the fused kernel loops over the contraction: sums of
  // squares and the matmul accumulated, as in Mirage's Figure 3.
  auto fused = fuse_region(h, all, target_by_name("h100"));
  ASSERT_TRUE(fused.has_value());
  EXPECT_GT(fused->body.loop, 1);
  int accumulators = 0;
  for (const Op& op : fused->body.ops) accumulators += op.kind == OpKind::accum_sum;
  EXPECT_EQ(accumulators, 2);
}

TEST(FuseRegion, RefusesWhatABlockGraphCannotRunThisWay) {
  // A reshape (data movement) in the region.
  GraphBuilder b(Level::kernel, "p");
  ValueId x = b.add_input("X", TensorType{DType::f32, {4, 8}});
  ValueId e = b.add(OpKind::exp, {x}, {}, "E");
  ValueId r = b.add(OpKind::reshape, {e}, {{"shape", std::vector<int64_t>{8, 4}}}, "R");
  b.add_output(b.add(OpKind::exp, {r}, {}, "O"));
  Graph g = std::move(b).finish();
  EXPECT_FALSE(fuse_region(g, {0, 1, 2}, target_by_name("h100")).has_value());
  EXPECT_TRUE(fuse_region(g, {0}, target_by_name("h100")).has_value());
  // softmax's rows do not fit in shared memory (a 1 x 2^20 row of f32): no schedule.
  GraphBuilder w(Level::kernel, "wide");
  ValueId y = w.add_input("Y", TensorType{DType::f32, {1, 1 << 20}});
  ValueId ye = w.add(OpKind::exp, {y}, {}, "E");
  ValueId ys = w.add(OpKind::sum, {ye}, {{"dim", int64_t{1}}}, "S");
  w.add_output(w.add(OpKind::div, {ye, ys}, {}, "O"));
  Graph wide = std::move(w).finish();
  EXPECT_FALSE(fuse_region(wide, {0, 1, 2}, target_by_name("h100")).has_value());
}

// Attention over 4096 keys for 2 x 256 queries: the grid (batch x query tiles) alone leaves most
// of an H100's 132 SMs idle, so the rule-built kernel splits the key loop over more blocks and
// combines the partial numerators and denominators in a second kernel (FlashDecoding's split KV);
// predicted faster than the best unsplit schedule, and proven equivalent.
TEST(FuseRegion, SplitsTheLoopWhenTheGridLeavesSMsIdle) {
  const Target& h100 = target_by_name("h100");
  Graph h = hoist_row_scales(
      expand_composites(test::load_graph_file(test::example_path("gqa_attention.weft"))));
  std::vector<int> all(h.ops.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  FuseOptions no_split;
  no_split.split_reductions = false;
  auto whole = fuse_region(h, all, h100, no_split);
  auto split = fuse_region(h, all, h100);
  ASSERT_TRUE(whole.has_value() && split.has_value());
  EXPECT_EQ(whole->kernels.ops.size(), 1u);
  ASSERT_EQ(split->kernels.ops.size(), 2u) << print_graph(split->kernels);
  const Graph& partial = *split->kernels.ops[0].body;
  const Graph& combine = *split->kernels.ops[1].body;
  EXPECT_GT(partial.num_blocks(), whole->body.num_blocks());
  EXPECT_EQ(partial.num_blocks() % combine.num_blocks(), 0);
  EXPECT_EQ(combine.loop, 1);
  EXPECT_LT(split->predicted_s, whole->predicted_s);
  // The region's kernel graph is the whole program here: it must compute the same function.
  Graph as_program = split->kernels;
  as_program.name = h.name;
  expect_equivalent(h, as_program, "split");
  // The baseline built from it is the fastest and holds the two kernels.
  std::vector<BaselineCandidate> bs = baseline_candidates(h, h100);
  const BaselineCandidate* best = &bs[0];
  for (const BaselineCandidate& b : bs)
    if (predict(b.graph, h100).total_s < predict(best->graph, h100).total_s) best = &b;
  EXPECT_EQ(count_kernels(best->graph), 2) << print_graph(best->graph);
}

// Every baseline of these programs is valid on the target and equivalent to its program; the
// rules that apply to each produce the fusions named.
TEST(BaselineCandidates, AreValidEquivalentAndIncludeTheExpectedFusions) {
  struct Case {
    const char* file;
    int min_candidates;
    int best_kernels;  // graph-defined kernels in the fastest baseline
  };
  for (const Case& c : {Case{"rms_norm_linear_small.weft", 3, 1}, Case{"lora_small.weft", 2, 1},
                        Case{"attention_small.weft", 3, 1}, Case{"gelu_mlp_small.weft", 2, 1},
                        Case{"mlp_block_small.weft", 3, 1}, Case{"layer_norm_small.weft", 2, 1},
                        Case{"silu_linear_tiny.weft", 2, 1}}) {
    SCOPED_TRACE(c.file);
    Graph g = load_data(c.file);
    const Target& h100 = target_by_name("h100");
    std::vector<BaselineCandidate> bs = baseline_candidates(g, h100);
    ASSERT_GE(static_cast<int>(bs.size()), c.min_candidates);
    EXPECT_EQ(bs[0].rule, "input");
    EXPECT_TRUE(bs[0].graph == g);
    std::set<std::string> texts;
    const BaselineCandidate* best = &bs[0];
    for (const BaselineCandidate& b : bs) {
      EXPECT_TRUE(texts.insert(print_graph(b.graph, false)).second) << "duplicate " << b.rule;
      expect_equivalent(g, b.graph, b.rule);
      if (predict(b.graph, h100).total_s < predict(best->graph, h100).total_s) best = &b;
    }
    EXPECT_LT(predict(best->graph, h100).total_s, predict(g, h100).total_s);
    EXPECT_EQ(count_kernels(best->graph), c.best_kernels) << best->rule << "\n"
                                                          << print_graph(best->graph);
  }
}

}  // namespace
}  // namespace weft
