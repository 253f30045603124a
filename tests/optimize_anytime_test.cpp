// Tests of optimize as a general tool: on random valid programs it always returns a verified
// µGraph no slower than its input (baselines), partitioned programs are searched in parts and
// stitched, the anytime search ends by itself ("complete", "converged") after reaching every
// kernel-graph size, and the time budget covers verification too.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "cost/cost_model.h"
#include "driver/optimize.h"
#include "driver/optimize_report.h"
#include "ir/expand_composites.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "search/baselines.h"
#include "search/constant_screen.h"
#include "testing/random_graph.h"
#include "tests/test_util.h"
#include "tests/tiers.h"
#include "verify/equivalence.h"

WEFT_TEST_TIERS("unit");
// Minutes under ASan at -O0, or wall-clock assertions that its slowness distorts (a 3 s budget
// spread over three levels reached one level in a CI run): they run in the optimized build
// (make test-heavy).
WEFT_TEST_TIERS_OF("OptimizeAnytime.TheTimeBudgetIsSpreadOverEveryKernelGraphSize", "heavy");
WEFT_TEST_TIERS_OF("OptimizeAnytime.TheTimeBudgetHoldsOverManySmallBlockSearches", "heavy");
WEFT_TEST_TIERS_OF("OptimizeAnytime.ALevelConvergedOnFusedKernelsStillTriesLibraryOperators",
                   "heavy");
WEFT_TEST_TIERS_OF("OptimizeTimeBudget.VerificationNeverRunsPastTheBudget", "heavy");
WEFT_TEST_TIERS_OF("OptimizeTimeBudget.EveryBudgetEndsWithAVerifiedAnswer", "heavy");
WEFT_TEST_TIERS_OF("OptimizeTimeBudget.VerdictsOfAStoppedVerificationAreReusedOnResume", "heavy");
WEFT_TEST_TIERS_OF("OptimizeTimeBudget.AnIncompleteOraclesCandidatesCannotCrowdOutTheRulesAnswer",
                   "heavy");

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
  EXPECT_EQ(r.stop, StopReason::state_budget);
  // Checked every 1024 states of a block search: at most that much past the budget per worker.
  EXPECT_LE(r.states, tiny_budget().state_budget + 2 * 1024);
  ASSERT_FALSE(r.top.empty());
  EXPECT_LE(r.top[0].predicted_s, r.program_predicted_s * (1 + 1e-12));
}

// ... and the constant screen (search/constant_screen.h) never drops one the verifier proves.
TEST(OptimizeAnytime, BaselinesOfRandomProgramsAreNeverWrong) {
  RandomGraphOptions options;
  options.dtypes = {DType::f32};
  int checked = 0;
  for (uint64_t seed = 100; seed < 160; ++seed) {
    Graph g = expand_composites(random_graph(seed, options));
    ConstantScreen screen(g);
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
      if (v.verdict == Verdict::equivalent) {
        EXPECT_TRUE(screen.may_be_equivalent(b.graph)) << "seed " << seed << " rule " << b.rule;
      }
    }
  }
  EXPECT_GT(checked, 10);
}

TEST(OptimizeAnytime, APartitionedProgramIsSearchedInPartsAndStitched) {
  SearchConfig config = tiny_budget();
  config.state_budget = 2000;
  OptimizeResult r = optimize(load_data("max_mlp_small.weft"), config);
  ASSERT_EQ(r.partition.size(), 3u);
  EXPECT_EQ(r.partition[1].rule, "operator outside the search");
  EXPECT_FALSE(r.partition[1].searched);
  EXPECT_TRUE(r.partition[0].searched && r.partition[2].searched);
  ASSERT_FALSE(r.top.empty());
  EXPECT_LE(r.top[0].predicted_s, r.program_predicted_s);
  // The summary reports the partition.
  nlohmann::json summary = optimize_summary_json(r, "max_mlp_small.weft");
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
  EXPECT_EQ(r.stop, StopReason::converged);
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
  EXPECT_EQ(r.stop, StopReason::time_budget);
}

// The budget holds however the search spends it. Here the last kernel above a first one has up
// to a million schedules per operand set, each searched in far fewer than the 1024 states after
// which a block search reads the clock, and nothing else read it: a 60 s budget ran 426 s.
TEST(OptimizeAnytime, TheTimeBudgetHoldsOverManySmallBlockSearches) {
  SearchConfig config;
  config.threads = 2;
  config.time_budget_s = 8;
  config.converge_s = 0;
  config.max_kernel_ops = 2;
  config.baselines = "off";
  config.top_k = 1;
  const auto start = std::chrono::steady_clock::now();
  OptimizeResult r = optimize(
      test::load_graph_file(test::source_path("bench/beyond_rules/norm_two_consumers.weft")),
      config);
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.levels_reached, 2);
  EXPECT_EQ(r.stop, StopReason::time_budget);
  EXPECT_LT(wall_s, config.time_budget_s + 4);
}

// A level converges in two parts: graphs starting with a fused kernel, then graphs starting with
// a library operator. Here the rules' µGraph is a library matmul and one kernel over (Y, W2);
// the many two-kernel graphs tried first once used up the level's convergence window, and the
// search returned its one-kernel 9.26 us form (1.35x slower).
TEST(OptimizeAnytime, ALevelConvergedOnFusedKernelsStillTriesLibraryOperators) {
  const Graph g =
      test::load_graph_file(test::source_path("bench/beyond_rules/matmul_norm_matmul.weft"));
  SearchConfig config;
  config.threads = 2;
  // The default window; it ends by convergence, and the budget is generous so that the levels'
  // shares do not cut it on a loaded machine (with 2 s windows it failed under a parallel ctest).
  config.time_budget_s = 300;
  config.converge_s = 5;
  config.baselines = "off";
  config.top_k = 1;
  OptimizeResult search = optimize(g, config);
  SearchConfig rules_only;  // the rule-built candidates and nothing searched
  rules_only.threads = 1;
  rules_only.state_budget = 1;
  rules_only.time_budget_s = 0;
  OptimizeResult rules = optimize(g, rules_only);
  ASSERT_FALSE(search.top.empty());
  ASSERT_FALSE(rules.top.empty());
  EXPECT_EQ(search.top[0].origin, "search");
  EXPECT_LE(search.top[0].predicted_s, rules.top[0].predicted_s * (1 + 1e-9));
}

TEST(OptimizeAnytime, AnExhaustedSpaceEndsComplete) {
  SearchConfig config = SearchConfig::load(test::source_path("tests/data/search_small.json"));
  config.threads = 1;
  config.time_budget_s = 600;  // convergence applies, but the space ends first
  config.converge_s = 300;
  OptimizeResult r = optimize(load_data("rms_norm_linear_small.weft"), config);
  EXPECT_EQ(r.stop, StopReason::complete);
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
  Graph g = load_data("max_mlp_small.weft");
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

// RMSNorm + Linear large enough that one candidate's verification (finite-field matmuls of
// 16x512x768 and the float check's) takes far longer than a millisecond on any machine.
Graph mid_rms_norm_linear() {
  return parse_graph(
      "program rms_norm_linear_mid\ninput X: f16[16, 512]\ninput W: f16[512, 768]\n"
      "N = rms_norm(X, eps=1e-6)\nO = matmul(N, W)\noutput O\n",
      "<mid>");
}

// No search to speak of (no operators, one state; not partitioned, so verdicts are checkpointed):
// the candidates are the baselines, the same every run, so which candidates a run verifies does
// not depend on how far a search got.
SearchConfig baselines_only(double time_budget_s) {
  SearchConfig c;
  c.threads = 1;
  c.kernel_ops.clear();
  c.block_ops.clear();
  c.state_budget = 1;
  c.partition = false;
  c.time_budget_s = time_budget_s;
  c.top_k = 5;
  return c;
}

// Verified by a finite-field test, not taken for free as the input program itself.
int tested_in_top(const OptimizeResult& r) {
  int n = 0;
  for (const RankedCandidate& c : r.top) n += c.verification.tests > 0;
  return n;
}

// A budget that is over before verification starts: the run still returns a verified µGraph, the
// input program (its verdict costs no test), starts no verification and says so.
TEST(OptimizeTimeBudget, VerificationNeverRunsPastTheBudget) {
  const SearchConfig config = baselines_only(1e-3);
  std::vector<OptimizeProgress> reports;
  OptimizeOptions options;
  options.on_progress = [&](const OptimizeProgress& p) { reports.push_back(p); };
  OptimizeResult r = optimize(mid_rms_norm_linear(), config, options);
  ASSERT_GE(r.baselines, 3) << "enough candidates for a top 5 to be cut short";
  ASSERT_EQ(r.top.size(), 1u);
  EXPECT_EQ(r.top[0].graph, r.program);
  EXPECT_EQ(r.top[0].verification.tests, 0);
  EXPECT_EQ(r.tests, 0);
  EXPECT_EQ(r.abandoned, 0) << "none started, so none was cut";
  EXPECT_TRUE(r.verification_stopped);
  EXPECT_EQ(r.verified + r.rejected + r.unverified, r.baselines);
  // The budget plan: a timed test, the search's share and the reserve make up the budget.
  EXPECT_GT(r.test_s, 0);
  EXPECT_LE(r.verify_reserve_s, config.time_budget_s / 2);
  EXPECT_NEAR(r.search_budget_s + r.verify_reserve_s, config.time_budget_s, 1e-3);
  // Reported: the last verification report, the summary text and summary.json.
  ASSERT_FALSE(reports.empty());
  EXPECT_EQ(reports.back().phase, OptimizeProgress::Phase::verify);
  EXPECT_TRUE(reports.back().verify_stopped);
  EXPECT_NE(optimize_progress_line(reports.back()).find("stopped at the time budget"),
            std::string::npos);
  EXPECT_NE(optimize_summary_text(r, "mid", "out")
                .find("stopped at the time budget: 1 of top 5 verified"),
            std::string::npos);
  const nlohmann::json summary = optimize_summary_json(r, "mid.weft");
  EXPECT_EQ(summary["verification_stopped_at_time_budget"], true);
  EXPECT_EQ(summary["verifications_cut_at_time_budget"], 0);
}

// Budgets from far too short to plenty: every run returns a verified, numerically acceptable
// µGraph no slower than the input, and its counts add up; somewhere on the way a budget lets some
// verifications happen but stops short of the top 5 (the regime the budget rules are for).
// Returns that budget (0: none found).
// Steps of 1.25x: the regime spans about the top-k's ratio of verification times (5x), so several
// steps land in it however slow a loaded machine makes each test.
double budget_that_stops_verification_short(const Graph& g) {
  for (double budget = 0.005; budget < 10; budget *= 1.25) {
    OptimizeResult r = optimize(g, baselines_only(budget));
    EXPECT_FALSE(r.top.empty()) << budget;
    if (r.top.empty()) continue;
    EXPECT_TRUE(r.top[0].verification.numerically_ok) << budget;
    EXPECT_LE(r.top[0].predicted_s, r.program_predicted_s) << budget;
    EXPECT_EQ(r.verified + r.rejected + r.unverified, r.baselines) << budget;
    EXPECT_LE(r.abandoned, r.unverified) << budget;
    if (r.verification_stopped && tested_in_top(r) >= 1) return budget;
    if (!r.verification_stopped) break;  // every verification fitted: larger budgets add nothing
  }
  return 0;
}

TEST(OptimizeTimeBudget, EveryBudgetEndsWithAVerifiedAnswer) {
  EXPECT_GT(budget_that_stops_verification_short(mid_rms_norm_linear()), 0)
      << "no budget verified some candidates but not the top 5";
}

// With time to spare the top-k are all verified, under the budget plan as without a budget.
TEST(OptimizeTimeBudget, TheTopKAreVerifiedWhenThereIsTime) {
  for (double budget : {0.0, 600.0}) {
    const SearchConfig config = baselines_only(budget);
    OptimizeResult r = optimize(mid_rms_norm_linear(), config);
    EXPECT_FALSE(r.verification_stopped) << budget;
    EXPECT_EQ(static_cast<int>(r.top.size()), config.top_k) << budget;
    EXPECT_GE(tested_in_top(r), config.top_k - 1) << budget;
    if (budget == 0) {
      EXPECT_EQ(r.search_budget_s, 0);  // no plan: the run is as it was before budgets
      EXPECT_EQ(r.test_s, 0);
    } else {
      EXPECT_GT(r.search_budget_s, budget / 2);
      EXPECT_LT(r.wall_s, budget);
    }
  }
}

// A run verification stopped at the budget saved its verdicts in the checkpoint: the resumed
// run (any budget: the fingerprint leaves budgets out) takes them without testing again.
TEST(OptimizeTimeBudget, VerdictsOfAStoppedVerificationAreReusedOnResume) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("weft_budget_ckpt_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  OptimizeOptions options;
  options.checkpoint_path = (dir / "run.ckpt").string();
  const Graph g = mid_rms_norm_linear();
  // The first budget whose run verified some candidates but stopped short of the top 5.
  OptimizeResult first;
  for (double budget = 0.005; budget < 10; budget *= 1.25) {
    std::filesystem::remove(options.checkpoint_path);
    first = optimize(g, baselines_only(budget), options);
    if (first.verification_stopped && tested_in_top(first) >= 1) break;
    if (!first.verification_stopped) break;
  }
  ASSERT_TRUE(first.verification_stopped);
  const int tested = tested_in_top(first);
  ASSERT_GE(tested, 1);
  OptimizeResult second = optimize(g, baselines_only(600), options);
  EXPECT_TRUE(second.resumed);
  EXPECT_GE(second.verdicts_reused, tested);
  EXPECT_FALSE(second.verification_stopped);
  ASSERT_EQ(static_cast<int>(second.top.size()), 5);
  EXPECT_LE(second.top[0].predicted_s, first.top[0].predicted_s);
  std::filesystem::remove_all(dir);
}

// A gated expert at sizes whose oracle stops saturating at a limit: every candidate of the right
// types is then "equivalent by abstract expression" (the finite-field verifier decides), and the
// cheapest of them (a lone exp(X), ...) rank far above the rules' µGraph. The rules' fastest is
// verified first, so the answer is never the input program when the rules did better.
TEST(OptimizeTimeBudget, AnIncompleteOraclesCandidatesCannotCrowdOutTheRulesAnswer) {
  Graph g = parse_graph(R"(
program gated_expert_small
input X: f16[16, 256]
input W1: f16[256, 512]
input W3: f16[256, 512]
input W2: f16[512, 256]
input R: f16[16, 1]
A = matmul(X, W1)
B = matmul(X, W3)
S = silu(A)
G = mul(S, B)
Y = matmul(G, W2)
O = mul(Y, R)
output O
)",
                        "gated_expert_small");
  double rules_best_s = predict(g, target_by_name("h100")).total_s;
  for (const BaselineCandidate& b : baseline_candidates(g, target_by_name("h100")))
    rules_best_s = std::min(rules_best_s, predict(b.graph, target_by_name("h100")).total_s);
  SearchConfig config;
  config.time_budget_s = 6;
  config.threads = 2;
  OptimizeResult r = optimize(g, config);
  ASSERT_FALSE(r.oracle_complete);  // the premise
  EXPECT_GT(r.unproven, 0);         // the oracle proved none of the search's candidates
  ASSERT_LT(rules_best_s, r.program_predicted_s);
  ASSERT_FALSE(r.top.empty());
  EXPECT_LE(r.top[0].predicted_s, rules_best_s * (1 + 1e-9)) << r.top[0].origin;
  EXPECT_TRUE(r.top[0].verification.equivalent);
}

}  // namespace
}  // namespace weft
