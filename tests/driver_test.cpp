// Tests of the optimize driver as a library and behind the CLI: progress reports, the
// cancellation hook (and Ctrl-C), a failing callback, the result files, and the configuration
// flags that come from the field table.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <regex>
#include <stdexcept>
#include <thread>

#include "driver/optimize.h"
#include "driver/optimize_report.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");
WEFT_TEST_TIERS_OF("OptimizeDriver.*", "tsan");

namespace weft {
namespace {

namespace fs = std::filesystem;

Graph silu_linear() {
  return test::load_graph_file(test::source_path("tests/data/silu_linear_tiny.weft"));
}

// The snapshot's configuration for silu_linear_tiny: 192 candidates in about 0.3 s.
SearchConfig state_limited_config() {
  SearchConfig c;
  c.threads = 1;
  c.state_budget = 200000;
  c.time_budget_s = 0;
  return c;
}

// A unique scratch directory, removed at the end of the test.
struct ScratchDir {
  fs::path path;
  explicit ScratchDir(const std::string& name)
      : path(fs::temp_directory_path() / fmt::format("weft-driver-{}-{}", name, getpid())) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~ScratchDir() { fs::remove_all(path); }
};

TEST(OptimizeDriver, ReportsProgressOfTheSearchThenOfEachVerification) {
  std::mutex mu;
  std::vector<OptimizeProgress> reports;
  OptimizeOptions options;
  options.progress_interval_s = 0.02;
  options.on_progress = [&](const OptimizeProgress& p) {
    std::lock_guard<std::mutex> lock(mu);
    reports.push_back(p);
  };
  OptimizeResult r = optimize(silu_linear(), state_limited_config(), options);
  ASSERT_EQ(r.stop, StopReason::state_budget);
  ASSERT_FALSE(r.top.empty());

  using Phase = OptimizeProgress::Phase;
  auto last_search = std::find_if(reports.begin(), reports.end(),
                                  [](const OptimizeProgress& p) { return p.search_done; });
  ASSERT_NE(last_search, reports.end()) << "no final search report";
  for (auto it = reports.begin(); it != last_search; ++it) {
    EXPECT_EQ(it->phase, Phase::search);
    EXPECT_LE(it->states, std::next(it)->states) << "states only grow";
    EXPECT_LE(it->candidates, std::next(it)->candidates);
  }
  EXPECT_EQ(last_search->phase, Phase::search);
  EXPECT_EQ(last_search->states, r.states);
  EXPECT_EQ(last_search->pruned, r.pruned_expr + r.pruned_bound);
  EXPECT_EQ(last_search->block_graphs, r.block_graphs);
  EXPECT_GT(last_search->candidates, 0);
  EXPECT_EQ(last_search->best_predicted_s, r.top[0].predicted_s)
      << "the fastest candidate is verified here";
  EXPECT_GT(last_search->memory_held_bytes, 0);
  EXPECT_EQ(last_search->memory_budget_bytes, r.memory_budget_bytes);

  // One verification report per candidate checked, in order.
  std::vector<OptimizeProgress> verifying(std::next(last_search), reports.end());
  ASSERT_EQ(static_cast<int64_t>(verifying.size()), r.verified + r.rejected);
  for (size_t i = 0; i < verifying.size(); ++i) {
    EXPECT_EQ(verifying[i].phase, Phase::verify);
    EXPECT_EQ(verifying[i].checked, static_cast<int64_t>(i + 1));
  }
  EXPECT_EQ(verifying.back().kept, static_cast<int64_t>(r.top.size()));
}

TEST(OptimizeDriver, TheStopHookEndsTheSearchAndKeepsWhatItFound) {
  // Unbounded but for a minute: the hook stops the search once a candidate has been found.
  SearchConfig config;
  config.threads = 2;
  config.time_budget_s = 60;
  std::atomic<bool> found{false}, polled{false};
  OptimizeOptions options;
  options.progress_interval_s = 0.02;
  options.on_progress = [&](const OptimizeProgress& p) {
    if (p.candidates > 0) found = true;
  };
  options.should_stop = [&] {
    polled = true;
    return found.load();
  };
  OptimizeResult r = optimize(silu_linear(), config, options);
  EXPECT_TRUE(polled);
  EXPECT_EQ(r.stop, StopReason::interrupted);
  EXPECT_LT(r.search_s, 30);
  ASSERT_FALSE(r.top.empty()) << "the candidates found before the stop are verified";
  for (const RankedCandidate& c : r.top) EXPECT_TRUE(c.verification.numerically_ok);
}

TEST(OptimizeDriver, ACallbackExceptionStopsTheSearchAndIsRethrown) {
  SearchConfig config;
  config.threads = 1;
  config.time_budget_s = 60;
  OptimizeOptions options;
  options.progress_interval_s = 0.02;
  options.on_progress = [](const OptimizeProgress&) { throw std::runtime_error("display closed"); };
  auto start = std::chrono::steady_clock::now();
  try {
    optimize(silu_linear(), config, options);
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "display closed");
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 30);
}

TEST(OptimizeDriver, WritesTheResultFiles) {
  ScratchDir dir("report");
  OptimizeResult r = optimize(silu_linear(), state_limited_config());
  ASSERT_GE(r.top.size(), 2u);
  std::vector<std::string> written =
      write_optimize_report((dir.path / "out").string(), r, "some/dir/silu_linear_tiny.weft");
  std::vector<std::string> expected = {"top-1.weft", "best.weft"};
  for (size_t i = 1; i < r.top.size(); ++i) expected.push_back(fmt::format("top-{}.weft", i + 1));
  expected.insert(expected.end(), {"summary.json", "timing.json"});
  EXPECT_EQ(written, expected);

  std::string best = test::read_text((dir.path / "out/best.weft").string());
  EXPECT_EQ(best, test::read_text((dir.path / "out/top-1.weft").string()));
  EXPECT_EQ(best, candidate_file_text(r.top[0], 1, "h100"));
  EXPECT_EQ(best.rfind("# weft optimize: rank 1, predicted ", 0), 0u) << best;
  EXPECT_NE(best.find("error bound " + error_bound_text(r.top[0].verification.bound)),
            std::string::npos);
  EXPECT_EQ(error_bound_text(0x1p-98 * 1.5), "2^-98");
  EXPECT_EQ(error_bound_text(0), "0");

  nlohmann::json summary =
      nlohmann::json::parse(test::read_text((dir.path / "out/summary.json").string()));
  EXPECT_EQ(summary, optimize_summary_json(r, "silu_linear_tiny.weft"));
  EXPECT_EQ(summary.at("input"), "silu_linear_tiny.weft") << "the file name only";
  EXPECT_EQ(summary.at("program"), r.program.name);
  EXPECT_EQ(summary.at("config"), r.config.to_json());
  EXPECT_EQ(summary.at("states"), r.states);
  EXPECT_EQ(summary.at("stop_reason"), "state budget");
  EXPECT_EQ(summary.at("top").size(), r.top.size());
  EXPECT_EQ(summary.at("top")[1].at("file"), "top-2.weft");
  nlohmann::json timing =
      nlohmann::json::parse(test::read_text((dir.path / "out/timing.json").string()));
  EXPECT_EQ(timing.at("search_s"), r.search_s);
  EXPECT_EQ(timing.at("resumed_from_checkpoint"), false);
  // When the best was found: within the search, after the start.
  ASSERT_FALSE(r.top.empty());
  EXPECT_GT(r.top[0].found_s, 0);
  EXPECT_LE(r.top[0].found_s, r.search_s);
  EXPECT_EQ(timing.at("best_found_s"), std::round(r.top[0].found_s * 1000) / 1000);

  // A file where the directory should be is a UserError naming it.
  fs::path blocked = dir.path / "blocked";
  { std::ofstream(blocked) << "x"; }
  try {
    write_optimize_report(blocked.string(), r, "x.weft");
    ADD_FAILURE() << "wrote into a file";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(blocked.string()), std::string::npos) << e.what();
  }
}

TEST(OptimizeDriver, ConfigurationFlagsComeFromTheFieldTable) {
  ScratchDir dir("flags");
  std::string program = test::source_path("tests/data/silu_linear_tiny.weft");
  // (Without pruning a block search can run long past the state budget, which is checked between
  // block searches: the time budget, checked within them, bounds the run.)
  auto [rc, text] = test::run_weft("optimize " + program + " --quiet --threads 1 --states 5000 " +
                                   "--time-budget 0.5 --seed 7 --top-k 2 --no-pruning -o " +
                                   (dir.path / "out").string());
  ASSERT_EQ(rc, 0) << text;
  nlohmann::json config =
      nlohmann::json::parse(test::read_text((dir.path / "out/summary.json").string())).at("config");
  EXPECT_EQ(config.at("state_budget"), 5000);
  EXPECT_EQ(config.at("time_budget_s"), 0.5);
  EXPECT_EQ(config.at("seed"), 7);
  EXPECT_EQ(config.at("top_k"), 2);
  EXPECT_EQ(config.at("threads"), 1);
  EXPECT_EQ(config.at("pruning"), false);

  // Bad values are refused as a configuration file's are, naming the flag.
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
           {"--top-k 0", "--top-k must be a positive integer, got 0"},
           {"--states 1.5", "--states must be a non-negative integer, got 1.5"},
           {"--time-budget soon", "--time-budget must be a non-negative number, got \"soon\""},
           {"--seed=-3", "--seed must be a non-negative integer, got -3"}}) {
    auto [bad_rc, bad_text] =
        test::run_weft("optimize " + program + " " + args + " -o " + (dir.path / "bad").string());
    EXPECT_EQ(bad_rc, 1) << args << ": " << bad_text;
    EXPECT_NE(bad_text.find(message), std::string::npos) << args << ": " << bad_text;
  }
  EXPECT_FALSE(fs::exists(dir.path / "bad"));

  // Every field with a flag shows it in the help, with its default.
  auto [help_rc, help] = test::run_weft("optimize --help");
  EXPECT_EQ(help_rc, 0);
  for (const SearchConfigField& f : search_config_fields()) {
    if (!f.flag.empty()) {
      EXPECT_NE(help.find(std::string(f.flag)), std::string::npos) << f.flag;
    }
  }
  EXPECT_NE(help.find("--top-k INT=5"), std::string::npos) << help;
}

// Runs `weft optimize` in the background and sends it SIGINT once its first progress line shows.
TEST(OptimizeDriver, CtrlCStopsTheCliSearchAndWritesWhatItFound) {
  ScratchDir dir("sigint");
  std::string bin = std::getenv("WEFT_BINARY") && *std::getenv("WEFT_BINARY")
                        ? std::getenv("WEFT_BINARY")
                        : WEFT_BINARY;
  std::string program = test::source_path("tests/data/silu_linear_tiny.weft");
  std::string out = (dir.path / "out").string(), log = (dir.path / "log.txt").string();
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    FILE* f = std::freopen(log.c_str(), "w", stdout);
    if (!f || dup2(fileno(stdout), 2) < 0) _exit(127);
    execl(bin.c_str(), bin.c_str(), "optimize", program.c_str(), "--progress", "--threads", "2",
          "--time-budget", "120", "-o", out.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  int status = 0;
  bool signalled = false, exited = false;
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      break;
    }
    // Interrupt once a progress line counts a candidate: on a loaded machine (or under a
    // sanitizer) the first line can come before any.
    if (!signalled && std::regex_search(test::read_text(log), std::regex("candidates [1-9]"))) {
      kill(pid, SIGINT);
      signalled = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!exited) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  std::string text = test::read_text(log);
  ASSERT_TRUE(signalled) << text;
  ASSERT_TRUE(exited) << "still running a minute after Ctrl-C\n" << text;
  ASSERT_TRUE(WIFEXITED(status)) << text;
  EXPECT_EQ(WEXITSTATUS(status), 130) << text;
  EXPECT_NE(text.find("interrupted; ranking and verifying"), std::string::npos) << text;
  EXPECT_NE(text.find("(stop: interrupted)"), std::string::npos) << text;
  nlohmann::json summary = nlohmann::json::parse(test::read_text(out + "/summary.json"));
  EXPECT_EQ(summary.at("stop_reason"), "interrupted");
  // A progress line had counted a candidate before the interrupt.
  EXPECT_TRUE(fs::exists(out + "/best.weft")) << text;
}

}  // namespace
}  // namespace weft
