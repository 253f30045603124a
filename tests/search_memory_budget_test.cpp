// Tests of the search's memory budget: the account (shares, memo limit, stop), its estimate
// against the memo it describes, the memo that stops growing and the search that goes on, the
// stop at the budget with the candidates found so far, checkpoints of a budget-limited memo, and
// the configuration key and CLI flag.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <tuple>

#include "driver/checkpoint.h"
#include "driver/optimize.h"
#include "ir/expand_composites.h"
#include "search/absexpr_oracle.h"
#include "search/kernel_search.h"
#include "search/memory_account.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");
WEFT_TEST_TIERS_OF("SearchMemoryBudget.AccountFollows*", "tsan");
WEFT_TEST_TIERS_OF("SearchMemoryBudget.AFullMemo*", "tsan");

namespace weft {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kMiB = int64_t{1} << 20;

Graph attention() {
  return test::load_graph_file(test::source_path("tests/data/decode_attention_small.weft"));
}

// Decode attention with room for two kernel operators: the first may be a graph-defined kernel
// whose outputs feed a pre-defined sum or div (intermediate mode). Unlimited, the search holds
// about 30 MB and completes in well under a second.
SearchConfig two_kernel_ops_config() {
  SearchConfig c;
  c.max_kernel_ops = 2;
  c.kernel_ops = {OpKind::sum, OpKind::div};
  c.max_graph_defined_kernels = 1;
  c.split_reductions = false;
  c.max_block_ops = 5;
  c.max_grid_dims = 1;
  c.max_loop = 4;
  c.max_blocks = 16;
  c.time_budget_s = 0;
  c.top_k = 2;
  c.threads = 1;  // budget decisions are then the same every run
  c.memory_budget_mb = 0;
  c.partition = false;  // the memo of the whole program's search is what is measured
  return c;
}

// The same with fewer schedules and block operators (a ~7 MB memo), for the tests that write it
// to a checkpoint: each term is written as text, which is what takes the time.
SearchConfig small_memo_config() {
  SearchConfig c = two_kernel_ops_config();
  c.max_block_ops = 4;
  c.max_loop = 2;
  c.max_blocks = 4;
  return c;
}

TEST(SearchMemoryBudget, AccountSharesPublishInStepsAndGiveBackWhatTheyHold) {
  StopSignal stop{Budget()};
  MemoryAccount account(10 * kMiB, stop);
  {
    MemoryAccount::Share share(account);
    share.set(3 * kMiB);
    EXPECT_EQ(account.held(), 3 * kMiB);
    share.set(3 * kMiB + 100);  // below a step: not published yet
    EXPECT_EQ(account.held(), 3 * kMiB);
    share.publish();
    EXPECT_EQ(account.held(), 3 * kMiB + 100);
  }
  EXPECT_EQ(account.held(), 0) << "a destroyed share gives its memory back";
  EXPECT_EQ(account.peak(), 3 * kMiB + 100);
  {
    MemoryAccount::Share share(account);
    share.set(5 * kMiB);
    share.commit(4 * kMiB);  // kept by a longer-lived structure
  }
  EXPECT_EQ(account.held(), 4 * kMiB);
  EXPECT_FALSE(account.memo_full());
  account.add(4 * kMiB);
  EXPECT_TRUE(account.memo_full()) << "8 of 10 MiB: the memo's share is used";
  EXPECT_FALSE(stop.stopped());
  account.add(3 * kMiB);
  EXPECT_TRUE(stop.stopped());
  EXPECT_EQ(stop.reason(), StopReason::memory_budget);
  EXPECT_STREQ(stop_reason_name(stop.reason()), "memory budget");
}

TEST(SearchMemoryBudget, UnlimitedAccountNeverStopsOrFillsTheMemo) {
  StopSignal stop{Budget()};
  MemoryAccount account(0, stop);
  account.add(int64_t{1} << 40);
  EXPECT_FALSE(account.memo_full());
  EXPECT_FALSE(stop.stopped());
}

// Runs the kernel search alone with an account, as optimize() does.
struct KernelSearchRun {
  explicit KernelSearchRun(const SearchConfig& config)
      : program(expand_composites(attention())),
        oracle(program),
        stop(config.budget()),
        memory(config.memory_budget_mb * kMiB, stop),
        constants(constants_of(program)),
        classes(analyze_dim_classes(program)) {
    KernelSearchContext ctx{program,        config,  target_by_name(config.target),
                            constants,      classes, oracle,
                            stats,          stop,    memo,
                            config.threads, &memory};
    search_kernel_graphs(ctx, [&](Graph&&) { held_at_candidates.push_back(memory.held()); });
  }
  Graph program;
  AbsExprOracle oracle;
  StopSignal stop;
  MemoryAccount memory;
  SearchConstants constants;
  DimClasses classes;
  SearchStats stats;
  BlockMemo memo;
  std::vector<int64_t> held_at_candidates;
};

// Intermediate-mode memo entries (a kernel whose outputs feed later operators) and their block
// graphs.
int64_t intermediate_block_graphs(const BlockMemo& memo) {
  int64_t n = 0;
  for (const auto& [key, results] : memo.snapshot())
    if (key.rfind("any", 0) == 0)
      for (const auto& sketches : results->per_schedule) n += static_cast<int64_t>(sketches.size());
  return n;
}

TEST(SearchMemoryBudget, AccountFollowsTheMemoAndOnlyGrowsWithoutABudget) {
  SearchConfig config = two_kernel_ops_config();
  config.threads = 2;  // shares published from two workers
  KernelSearchRun run(config);
  EXPECT_EQ(run.stop.reason(), StopReason::complete);
  ASSERT_GT(intermediate_block_graphs(run.memo), 1000) << "the test needs intermediate mode";
  ASSERT_GE(run.held_at_candidates.size(), 2u);
  EXPECT_GT(run.held_at_candidates.front(), 0);
  for (size_t i = 1; i < run.held_at_candidates.size(); ++i)
    EXPECT_LE(run.held_at_candidates[i - 1], run.held_at_candidates[i]) << "candidate " << i;
  // What the search added piece by piece is what the memo and the terms hold at the end.
  EXPECT_EQ(run.memory.held(), run.memo.bytes() + run.oracle.memory_bytes());
  EXPECT_GT(run.oracle.memory_bytes(), 0);
  EXPECT_EQ(run.memory.sampled_peak(), run.memory.held());
  EXPECT_GE(run.memory.peak(), run.memory.held());
  // Most of it is the intermediate-mode block graphs, several hundred bytes each.
  EXPECT_GT(run.memo.bytes(), intermediate_block_graphs(run.memo) * 300);
}

TEST(SearchMemoryBudget, AFullMemoStopsGrowingAndTheSearchGoesOn) {
  SearchConfig config = two_kernel_ops_config();
  OptimizeResult unlimited = optimize(attention(), config);
  ASSERT_EQ(unlimited.stop, StopReason::complete);
  ASSERT_GT(unlimited.peak_accounted_bytes, 20 * kMiB);
  EXPECT_EQ(unlimited.memo_truncated, 0);
  config.memory_budget_mb = 12;  // the memo may take 9.6 MB of the ~30 it would
  config.threads = 2;            // which block graphs the memo keeps now depends on timing
  OptimizeResult limited = optimize(attention(), config);
  EXPECT_EQ(limited.stop, StopReason::complete);
  EXPECT_GT(limited.memo_truncated, 0);
  EXPECT_LE(limited.peak_accounted_bytes, 12 * kMiB);
  EXPECT_LT(limited.candidates, unlimited.candidates);
  EXPECT_LT(limited.block_graphs, unlimited.block_graphs);
  ASSERT_FALSE(limited.top.empty());
  // Here the best µGraph is a single kernel, which needs no intermediate block graphs.
  EXPECT_EQ(limited.top[0].text, unlimited.top[0].text);
}

TEST(SearchMemoryBudget, ATinyBudgetStopsTheSearchAndKeepsTheCandidatesFoundSoFar) {
  SearchConfig config = two_kernel_ops_config();
  config.memory_budget_mb = 2;
  OptimizeResult r = optimize(attention(), config);
  EXPECT_EQ(r.stop, StopReason::memory_budget);
  EXPECT_GT(r.peak_accounted_bytes, 2 * kMiB);
  EXPECT_GT(r.candidates, 0);
  ASSERT_FALSE(r.top.empty()) << "the one-kernel candidates come before the budget is reached";
  for (const RankedCandidate& c : r.top) {
    EXPECT_TRUE(c.verification.equivalent);
    EXPECT_LE(c.verification.bound, 0x1p-60);
  }
}

TEST(SearchMemoryBudget, CheckpointsSkipCutShortSchedulesAndRoundTripTheRest) {
  KernelSearchRun run(small_memo_config());
  // Mark one finished schedule as cut short by a full memo: it must not be saved as done.
  std::string cut_key;
  size_t cut_index = 0;
  for (const auto& [key, results] : run.memo.snapshot())
    for (size_t i = 0; i < results->schedules.size() && cut_key.empty(); ++i)
      if (key.rfind("any", 0) == 0 && !results->per_schedule[i].empty()) {
        results->truncated[i] = true;
        cut_key = key;
        cut_index = i;
      }
  ASSERT_FALSE(cut_key.empty());
  fs::path path = fs::temp_directory_path() / fmt::format("weft-memory-ckpt-{}.json", getpid());
  CheckpointData data;
  data.fingerprint = "test";
  data.verified["kernel x"] = VerifiedRecord{true, true, 0x1p-70, 2, 1e-7, ""};
  save_checkpoint(path.string(), data, run.memo, run.oracle);
  // Written piece by piece, it is still exactly the document json::dump would write.
  std::string text = test::read_text(path.string());
  EXPECT_EQ(nlohmann::json::parse(text).dump() + "\n", text);

  AbsExprOracle oracle(run.program);
  BlockMemo other;
  CheckpointData mismatch;
  EXPECT_FALSE(load_checkpoint(path.string(), "another", mismatch, other, oracle));
  EXPECT_TRUE(other.snapshot().empty());
  EXPECT_TRUE(mismatch.verified.empty());

  CheckpointData loaded;
  ASSERT_TRUE(load_checkpoint(path.string(), "test", loaded, other, oracle));
  EXPECT_EQ(loaded.verified.size(), 1u);
  auto before = run.memo.snapshot(), after = other.snapshot();
  ASSERT_EQ(before.size(), after.size());
  for (const auto& [key, a] : before) {
    ASSERT_TRUE(after.count(key)) << key;
    const BlockResults& b = *after.at(key);
    ASSERT_EQ(a->schedules, b.schedules);
    for (size_t i = 0; i < a->schedules.size(); ++i) {
      bool cut = key == cut_key && i == cut_index;
      EXPECT_EQ(b.done[i], a->done[i] && !cut) << key << " schedule " << i;
      if (!b.done[i]) continue;
      ASSERT_EQ(a->per_schedule[i].size(), b.per_schedule[i].size());
      for (size_t j = 0; j < b.per_schedule[i].size(); ++j) {
        const BlockSketch &x = a->per_schedule[i][j], &y = b.per_schedule[i][j];
        EXPECT_EQ(x, y);
        EXPECT_EQ(x.output_types, y.output_types);
        EXPECT_EQ(x.output_classes, y.output_classes);
        EXPECT_EQ(x.output_parts, y.output_parts);
        for (size_t o = 0; o < x.output_terms.size(); ++o)
          EXPECT_EQ(run.oracle.text(x.output_terms[o]), oracle.text(y.output_terms[o]));
      }
    }
  }
  fs::remove(path);
}

TEST(SearchMemoryBudget, ABudgetLimitedRunResumesUnderALargerBudget) {
  fs::path path = fs::temp_directory_path() / fmt::format("weft-memory-resume-{}.json", getpid());
  fs::remove(path);
  SearchConfig config = small_memo_config();
  OptimizeResult straight = optimize(attention(), config);
  OptimizeOptions options;
  options.checkpoint_path = path.string();
  config.memory_budget_mb = 1;
  OptimizeResult limited = optimize(attention(), config, options);
  ASSERT_GT(limited.memo_truncated, 0) << "the schedules the resumed search must redo";
  ASSERT_LT(limited.candidates, straight.candidates);
  config.memory_budget_mb = 0;
  OptimizeResult resumed = optimize(attention(), config, options);
  EXPECT_TRUE(resumed.resumed) << "the budget is not part of the checkpoint's fingerprint";
  EXPECT_EQ(resumed.stop, StopReason::complete);
  EXPECT_EQ(resumed.memo_truncated, 0);
  EXPECT_EQ(resumed.candidates, straight.candidates);
  ASSERT_EQ(resumed.top.size(), straight.top.size());
  for (size_t i = 0; i < straight.top.size(); ++i)
    EXPECT_EQ(resumed.top[i].text, straight.top[i].text);
  fs::remove(path);
}

TEST(SearchMemoryBudget, ConfigKeyRoundTripsAndRejectsBadValues) {
  SearchConfig c;
  EXPECT_GT(c.memory_budget_mb, 0) << "the default is a share of physical memory";
  EXPECT_EQ(c.memory_budget_mb, SearchConfig::default_memory_budget_mb());
  c.memory_budget_mb = 1234;
  SearchConfig d;
  d.merge_json(c.to_json(), "test");
  EXPECT_EQ(d.memory_budget_mb, 1234);
  EXPECT_EQ(d.to_json(), c.to_json());
  d.merge_json({{"memory_budget_mb", 0}}, "test");
  EXPECT_EQ(d.memory_budget_mb, 0);
  for (const nlohmann::json& bad :
       {nlohmann::json(-1), nlohmann::json(1.5), nlohmann::json("4G")}) {
    try {
      d.merge_json({{"memory_budget_mb", bad}}, "config.json");
      ADD_FAILURE() << bad.dump() << " accepted";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("memory_budget_mb"), std::string::npos) << e.what();
    }
  }
}

TEST(SearchMemoryBudget, CliFlagRejectsANegativeBudgetAndReportsTheStop) {
  std::string program = test::source_path("tests/data/decode_attention_small.weft");
  fs::path dir = fs::temp_directory_path() / fmt::format("weft-memory-cli-{}", getpid());
  fs::remove_all(dir);
  auto [rc, text] =
      test::run_weft("optimize " + program + " --memory-budget=-5 -o " + (dir / "out").string());
  EXPECT_EQ(rc, 1) << text;
  EXPECT_NE(text.find("--memory-budget must be a non-negative"), std::string::npos) << text;
  EXPECT_FALSE(fs::exists(dir / "out"));

  fs::create_directories(dir);
  {
    std::ofstream config(dir / "config.json");
    config << two_kernel_ops_config().to_json().dump();
  }
  std::tie(rc, text) =
      test::run_weft("optimize " + program + " --quiet --config " + (dir / "config.json").string() +
                     " --memory-budget 2 -o " + (dir / "out").string());
  EXPECT_EQ(rc, 0) << text;
  EXPECT_NE(text.find("stop: memory budget"), std::string::npos) << text;
  EXPECT_NE(text.find("of a 2 MB budget"), std::string::npos) << text;
  nlohmann::json summary =
      nlohmann::json::parse(test::read_text((dir / "out/summary.json").string()));
  EXPECT_EQ(summary.at("stop_reason"), "memory budget");
  EXPECT_EQ(summary.at("memory_budget_mb"), 2);
  EXPECT_EQ(summary.at("config").at("memory_budget_mb"), 2);
  EXPECT_GE(summary.at("peak_accounted_memory_mb").get<double>(), 2.0);
  EXPECT_TRUE(fs::exists(dir / "out/best.weft")) << "the candidates found before the stop";

  auto [help_rc, help] = test::run_weft("optimize --help");
  EXPECT_EQ(help_rc, 0);
  EXPECT_NE(help.find("--memory-budget"), std::string::npos) << help;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace weft
