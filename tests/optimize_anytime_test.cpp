// Tests of optimize as a general tool: on random valid programs it always returns a verified
// µGraph no slower than its input (baselines), partitioned programs are searched in parts and
// stitched, and the anytime search ends by itself ("complete", "converged") after reaching every
// kernel-graph size.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "driver/optimize.h"
#include "driver/optimize_report.h"
#include "ir/expand_composites.h"
#include "ir/printer.h"
#include "search/baselines.h"
#include "testing/random_graph.h"
#include "tests/test_util.h"
#include "verify/equivalence.h"

namespace weft {
namespace {

Graph load_data(const std::string& name) {
  return test::load_graph_file(test::source_path("tests/data/" + name));
}

// A search cut short at once: what optimize returns then comes from the baselines.
SearchConfig tiny_budget() {
  SearchConfig c;
  c.threads = 1;
  c.time_budget_s = 0;
  c.state_budget = 300;
  c.top_k = 2;
  return c;
}

TEST(OptimizeAnytime, RandomProgramsAlwaysGetAVerifiedGraphNoSlowerThanTheInput) {
  RandomGraphOptions options;
  options.dtypes = {DType::f32};  // the float check's tolerance is for rounding, not for f16 range
  int partitioned = 0, fused = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Graph g = random_graph(seed, options);
    OptimizeResult r;
    try {
      r = optimize(g, tiny_budget());
    } catch (const std::exception& e) {
      ADD_FAILURE() << "seed " << seed << ": " << e.what() << "\n" << print_graph(g);
      continue;
    }
    ASSERT_FALSE(r.top.empty()) << "seed " << seed;
    EXPECT_TRUE(r.top[0].verification.numerically_ok);
    EXPECT_LE(r.top[0].predicted_s, r.program_predicted_s * (1 + 1e-12)) << "seed " << seed;
    EXPECT_GE(r.baselines, 1);
    partitioned += !r.partition.empty();
    fused += r.top[0].origin != "baseline:input";
  }
  // The generator's programs exercise both paths (and not only the input program comes back).
  EXPECT_GT(partitioned, 0);
  EXPECT_GT(fused, 0);
}

// The state budget stops the search inside one block search too: on this program one block
// search alone once ran for minutes and gigabytes with a budget of 300 states.
TEST(OptimizeAnytime, StateBudgetHoldsInsideOneBlockSearch) {
  Graph g = load_data("collapsing_block.weft");
  OptimizeResult r = optimize(g, tiny_budget());
  EXPECT_EQ(r.stop, SearchStop::state_budget);
  // Checked every 1024 states of a block search: at most that much past the budget per worker.
  EXPECT_LE(r.states, tiny_budget().state_budget + 2 * 1024);
  ASSERT_FALSE(r.top.empty());
  EXPECT_LE(r.top[0].predicted_s, r.program_predicted_s * (1 + 1e-12));
}

TEST(OptimizeAnytime, BaselinesOfRandomProgramsAreNeverWrong) {
  RandomGraphOptions options;
  options.dtypes = {DType::f32};
  int checked = 0;
  for (uint64_t seed = 100; seed < 160; ++seed) {
    Graph g = expand_composites(random_graph(seed, options));
    for (const BaselineCandidate& b : baseline_candidates(g, target_by_name("h100"))) {
      if (b.rule == "input") continue;
      VerifyResult v;
      try {
        v = verify_equivalent(g, b.graph);
      } catch (const UserError&) {
        continue;  // a verifier limit (too deep for the finite-field test), not a verdict
      }
      EXPECT_NE(v.verdict, Verdict::not_equivalent) << "seed " << seed << " rule " << b.rule << "\n"
                                                    << print_graph(g) << "\n"
                                                    << print_graph(b.graph);
      checked += v.verdict == Verdict::equivalent;
    }
  }
  EXPECT_GT(checked, 10);
}

TEST(OptimizeAnytime, APartitionedProgramIsSearchedInPartsAndStitched) {
  SearchConfig config = tiny_budget();
  config.state_budget = 2000;
  OptimizeResult r = optimize(load_data("gelu_mlp_small.weft"), config);
  ASSERT_EQ(r.partition.size(), 3u);
  EXPECT_EQ(r.partition[1].rule, "operator outside the search");
  EXPECT_FALSE(r.partition[1].searched);
  EXPECT_TRUE(r.partition[0].searched && r.partition[2].searched);
  ASSERT_FALSE(r.top.empty());
  EXPECT_LE(r.top[0].predicted_s, r.program_predicted_s);
  // The summary reports the partition.
  nlohmann::json summary = optimize_summary_json(r, "gelu_mlp_small.weft");
  ASSERT_TRUE(summary.contains("partition"));
  EXPECT_EQ(summary["partition"].size(), 3u);
  EXPECT_EQ(summary["partition"][1]["computes"], nlohmann::json::array({"G"}));
  // Each searched part's verified best is no slower than the part itself.
  for (const OptimizeResult::Part& p : r.partition) {
    EXPECT_LE(p.best_predicted_s, p.input_predicted_s);
    EXPECT_FALSE(p.best_origin.empty());
  }
  for (const auto& [why, n] : r.rejections) ADD_FAILURE() << why;
}

TEST(OptimizeAnytime, ASearchThatStopsImprovingEndsConvergedAfterReachingEverySize) {
  SearchConfig config;
  config.threads = 1;
  config.time_budget_s = 120;
  config.converge_s = 0.5;
  config.max_kernel_ops = 3;
  OptimizeResult r = optimize(load_data("rms_norm_linear_small.weft"), config);
  EXPECT_EQ(r.stop, SearchStop::converged);
  EXPECT_EQ(r.levels_reached, 3);
  EXPECT_GE(r.levels_converged, 1);
  EXPECT_LT(r.search_s, 60);
  ASSERT_FALSE(r.top.empty());
  EXPECT_EQ(optimize_summary_json(r, "x.weft")["stop_reason"], "converged");
}

TEST(OptimizeAnytime, TheTimeBudgetIsSpreadOverEveryKernelGraphSize) {
  SearchConfig config;
  config.threads = 1;
  config.time_budget_s = 3;
  config.converge_s = 0;  // only the budget ends levels
  config.max_kernel_ops = 3;
  config.top_k = 1;
  OptimizeResult r = optimize(load_data("rms_norm_linear_small.weft"), config);
  EXPECT_EQ(r.levels_reached, 3);
  EXPECT_EQ(r.stop, SearchStop::time_budget);
}

TEST(OptimizeAnytime, AnExhaustedSpaceEndsComplete) {
  SearchConfig config = SearchConfig::load(test::source_path("tests/data/search_small.json"));
  config.threads = 1;
  config.time_budget_s = 600;  // convergence applies, but the space ends first
  config.converge_s = 300;
  OptimizeResult r = optimize(load_data("rms_norm_linear_small.weft"), config);
  EXPECT_EQ(r.stop, SearchStop::complete);
  EXPECT_EQ(r.levels_reached, config.max_kernel_ops);
  EXPECT_EQ(r.levels_cut + r.levels_converged, 0);
}

// A program searched in parts keeps one checkpoint per part (CHECKPOINT.partN); a second run
// resumes every part from its own and ends with the same best µGraph.
TEST(OptimizeAnytime, APartitionedRunCheckpointsEachPartAndResumes) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("weft_parts_ckpt_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  SearchConfig config;
  config.threads = 1;
  config.time_budget_s = 20;
  config.state_budget = 20000;
  config.max_kernel_ops = 3;
  config.top_k = 1;
  OptimizeOptions options;
  options.checkpoint_path = (dir / "run.ckpt").string();
  Graph g = load_data("gelu_mlp_small.weft");
  OptimizeResult first = optimize(g, config, options);
  ASSERT_GT(first.partition.size(), 1u);
  EXPECT_FALSE(first.resumed);
  int searched = 0;
  for (size_t i = 0; i < first.partition.size(); ++i) {
    if (!first.partition[i].searched) continue;
    ++searched;
    EXPECT_TRUE(std::filesystem::exists(fmt::format("{}.part{}", options.checkpoint_path, i + 1)))
        << "part " << i + 1;
  }
  ASSERT_GT(searched, 0);
  OptimizeResult second = optimize(g, config, options);
  EXPECT_TRUE(second.resumed);
  ASSERT_FALSE(first.top.empty());
  ASSERT_FALSE(second.top.empty());
  EXPECT_EQ(print_graph(second.top[0].graph, false), print_graph(first.top[0].graph, false));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace weft
