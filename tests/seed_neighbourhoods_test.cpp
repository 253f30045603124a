// Tests of the baselines' neighbourhoods (search/seed_neighbourhoods.h) and of `--baselines seed`:
// which units join, the order, stitching back an equivalent program, and a seeded optimize.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "cost/cost_model.h"
#include "driver/optimize.h"
#include "ir/expand_composites.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/validate.h"
#include "search/fuse_region.h"
#include "search/seed_neighbourhoods.h"
#include "tests/test_util.h"
#include "tests/tiers.h"
#include "verify/equivalence.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

const Target& h100() {
  return target_by_name("h100");
}

// A baseline of `program` fusing each of `regions` (op indices) by rule, built by hand.
BaselineCandidate hand_baseline(const Graph& program,
                                const std::vector<std::vector<int>>& regions) {
  BaselineCandidate b{"hand", program, program, {}, {}};
  for (const std::vector<int>& r : regions) {
    std::optional<FusedRegion> f = fuse_region(program, r, h100());
    EXPECT_TRUE(f) << "region " << r.front();
    if (!f) continue;
    b.fused_ops.push_back(r);
    b.fused.push_back(*f);
  }
  return b;
}

// The value names the searched unit computes.
std::set<std::string> searched_names(const SeedNeighbourhood& n) {
  std::set<std::string> out;
  for (int op : n.units[n.searched].ops)
    for (ValueId v : n.base.ops[op].outputs) out.insert(n.base.value(v).name);
  return out;
}

void expect_stitches_equivalent(const Graph& program, const SeedNeighbourhood& n,
                                const Graph& searched) {
  Graph s = stitch_seed(n, searched);
  EXPECT_TRUE(check_graph(s, h100()).empty()) << print_graph(s);
  EXPECT_EQ(parse_graph(print_graph(s), "stitched"), s) << print_graph(s);
  EXPECT_EQ(verify_equivalent(program, s).verdict, Verdict::equivalent) << print_graph(s);
}

constexpr const char* kSkipPath = R"(
program skip_path
input X: f16[16, 64]
input W: f16[64, 64]
A = exp(X)
B = matmul(A, W)
C = add(A, B)
output C
)";

TEST(SeedNeighbourhoods, AFusionJoinsANeighbourOnlyWhereNoPathLeavesAndReturns) {
  Graph g = parse_graph(kSkipPath, "skip_path");
  // The exp fused alone: with the matmul it may join; with the add it may not (the path through
  // the matmul would leave the pair and come back).
  std::vector<SeedNeighbourhood> hoods = seed_neighbourhoods({hand_baseline(g, {{0}})}, h100());
  ASSERT_EQ(hoods.size(), 2u);
  EXPECT_EQ(searched_names(hoods[0]), (std::set<std::string>{"A"}));
  EXPECT_EQ(searched_names(hoods[1]), (std::set<std::string>{"A", "B"}));
  for (const SeedNeighbourhood& n : hoods) {
    EXPECT_EQ(n.rule, "hand");
    EXPECT_EQ(n.units.size(), n.kernels.size());
    // The searched unit's operators as the baseline built them: the fused exp's kernel, plus
    // the library matmul when joined.
    EXPECT_GT(n.baseline_predicted_s, 0);
    expect_stitches_equivalent(g, n, n.units[n.searched].graph);
  }
  EXPECT_GT(hoods[1].baseline_predicted_s, hoods[0].baseline_predicted_s);
}

constexpr const char* kSoftmaxMatmul = R"(
program softmax_matmul
input X: f16[16, 64]
input W: f16[64, 32]
input Y: f16[16, 32]
A = exp(X)
S = sum(A, dim=1)
N = div(A, S)
M = matmul(N, W)
E = add(M, Y)
output E
)";

TEST(SeedNeighbourhoods, EachFusionAloneAndWithEachNeighbourTheSlowestFirst) {
  Graph g = parse_graph(kSoftmaxMatmul, "softmax_matmul");
  BaselineCandidate b = hand_baseline(g, {{0, 1, 2}, {4}});
  const bool softmax_slower = b.fused[0].predicted_s > b.fused[1].predicted_s;
  std::vector<SeedNeighbourhood> hoods = seed_neighbourhoods({b}, h100());
  ASSERT_EQ(hoods.size(), 4u);
  std::set<std::string> softmax{"A", "S", "N"}, epilogue{"E"};
  std::set<std::string> softmax_mm{"A", "S", "N", "M"}, mm_epilogue{"M", "E"};
  const auto& first = softmax_slower ? softmax : epilogue;
  const auto& first_joined = softmax_slower ? softmax_mm : mm_epilogue;
  const auto& second = softmax_slower ? epilogue : softmax;
  const auto& second_joined = softmax_slower ? mm_epilogue : softmax_mm;
  EXPECT_EQ(searched_names(hoods[0]), first);
  EXPECT_EQ(searched_names(hoods[1]), first_joined);
  EXPECT_EQ(searched_names(hoods[2]), second);
  EXPECT_EQ(searched_names(hoods[3]), second_joined);
  for (const SeedNeighbourhood& n : hoods) {
    // Unfused (the searched unit as library operators) and fused again by rule.
    expect_stitches_equivalent(g, n, n.units[n.searched].graph);
    std::optional<FusedRegion> refused = fuse_region(n.base, n.units[n.searched].ops, h100());
    if (refused) expect_stitches_equivalent(g, n, refused->kernels);
  }
}

TEST(SeedNeighbourhoods, NoneForTheInputProgramOrOneThatWouldBeTheWholeProgram) {
  Graph g = parse_graph(kSkipPath, "skip_path");
  EXPECT_TRUE(seed_neighbourhoods({BaselineCandidate{"input", g, {}, {}, {}}}, h100()).empty());
  // The matmul and add fused (a matmul epilogue): joined with the exp it would be everything.
  std::vector<SeedNeighbourhood> hoods = seed_neighbourhoods({hand_baseline(g, {{1, 2}})}, h100());
  ASSERT_EQ(hoods.size(), 1u);
  EXPECT_EQ(searched_names(hoods[0]), (std::set<std::string>{"B", "C"}));
}

TEST(SeedNeighbourhoods, TheRulesBaselinesRecordWhatTheyFused) {
  Graph g = parse_graph(kSoftmaxMatmul, "softmax_matmul");
  int fused = 0, rebuilt = 0;
  for (const BaselineCandidate& b : baseline_candidates(g, h100())) {
    ASSERT_EQ(b.fused.size(), b.fused_ops.size());
    if (b.rule == "input") {
      EXPECT_TRUE(b.fused.empty());
      continue;
    }
    ++fused;
    EXPECT_FALSE(b.fused.empty()) << b.rule;
    EXPECT_EQ(b.base.inputs.size(), g.inputs.size());
    // Every neighbourhood of a rule's baseline stitches back to an equivalent program, and one
    // of a single fusion, given that fusion's own kernels, is the baseline again.
    for (const SeedNeighbourhood& n : seed_neighbourhoods({b}, h100())) {
      expect_stitches_equivalent(g, n, n.units[n.searched].graph);
      for (size_t f = 0; f < b.fused.size(); ++f) {
        std::vector<int> ops = b.fused_ops[f];
        std::sort(ops.begin(), ops.end());
        if (ops != n.units[n.searched].ops) continue;
        Graph same = stitch_seed(n, b.fused[f].kernels);
        EXPECT_NEAR(predict(same, h100()).total_s, predict(b.graph, h100()).total_s, 1e-12);
        ++rebuilt;
      }
    }
  }
  EXPECT_GT(fused, 0);
  EXPECT_GT(rebuilt, 0);
}

TEST(SearchConfig, BaselinesTakeOnOffOrSeed) {
  SearchConfig c;
  c.merge_json({{"baselines", "seed"}}, "test");
  EXPECT_EQ(c.baselines, "seed");
  EXPECT_THROW(c.merge_json({{"baselines", "maybe"}}, "test"), UserError);
}

// Seeded: the baselines' neighbourhoods are searched (baselines off inside) and stitched back;
// the answer is never worse than the baselines', and the summary says what was searched.
TEST(OptimizeSeeded, SearchesTheBaselinesNeighbourhoodsAndStitchesTheirBestsBack) {
  Graph g = parse_graph(kSoftmaxMatmul, "softmax_matmul");
  SearchConfig config;
  config.max_kernel_ops = 2;
  config.max_block_ops = 6;
  config.partition = false;
  config.max_grid_dims = 1;
  config.time_budget_s = 0;
  config.state_budget = 20000;
  config.top_k = 1;
  config.threads = 2;
  config.baselines = "on";
  OptimizeResult on = optimize(g, config);
  config.baselines = "seed";
  OptimizeResult seeded = optimize(g, config);
  ASSERT_FALSE(on.top.empty());
  ASSERT_FALSE(seeded.top.empty());
  EXPECT_LE(seeded.top[0].predicted_s, on.top[0].predicted_s * (1 + 1e-9));
  EXPECT_TRUE(on.seeds.empty());
  ASSERT_FALSE(seeded.seeds.empty());
  int searched = 0;
  for (const OptimizeResult::Part& s : seeded.seeds) {
    EXPECT_EQ(s.rule.rfind("seed:", 0), 0u) << s.rule;
    EXPECT_FALSE(s.ops.empty());
    EXPECT_GT(s.states, 0);
    EXPECT_GT(s.input_predicted_s, 0);
    searched += s.best_origin == "search";
  }
  // The search finds a µGraph for at least one neighbourhood by itself.
  EXPECT_GT(searched, 0);
  EXPECT_GT(seeded.states, on.states);
}

}  // namespace
}  // namespace weft
