// The CPU backend against the reference interpreter: every example (at test size and at full
// size) and every block-level operator the backend emits.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/target.h"
#include "driver/optimize.h"
#include "interp/compare.h"
#include "interp/interpreter.h"
#include "interp/random_inputs.h"
#include "ir/parser.h"
#include "lower/pipeline.h"
#include "runtime/cpu_program.h"
#include "runtime/host_tensors.h"
#include "runtime/timing.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit", "loads_generated");

namespace weft {
namespace {

Graph load(const std::string& path) {
  return test::load_graph_file(path);
}

std::string small(const std::string& name) {
  return weft::test::source_dir() + "/tests/golden/lower/" + name;
}

// Runs `g` with the CPU backend and with the interpreter (f64) on the same seeded inputs.
void expect_matches_interpreter(const Graph& g, uint64_t seed = 11) {
  auto inputs = random_inputs(g, seed);
  std::vector<std::vector<float>> in;
  for (const auto& t : inputs) {
    double lo = t.data[0], hi = t.data[0];
    for (double v : t.data) lo = std::min(lo, v), hi = std::max(hi, v);
    ASSERT_LT(lo, hi) << "constant input";
    in.emplace_back(t.data.begin(), t.data.end());
  }
  auto prog = compile_program(g, target_by_name("cpu"), Backend::cpu);
  auto got = prog->run(in);
  auto want = evaluate_real(g, inputs, /*f32=*/false);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    Tensor<double> gt(want[i].shape, std::vector<double>(got[i].begin(), got[i].end()));
    Comparison c = compare_outputs(gt, want[i], /*f32=*/true);
    EXPECT_GT(c.max_ref, 0) << "trivial reference output " << i;
    EXPECT_TRUE(c.ok) << g.name << " output " << i << ": scaled error " << c.scaled_error;
  }
}

class SmallProgram : public testing::TestWithParam<const char*> {};

TEST_P(SmallProgram, MatchesInterpreter) {
  expect_matches_interpreter(load(small(GetParam())));
}

INSTANTIATE_TEST_SUITE_P(CpuBackend, SmallProgram,
                         testing::Values("rms_norm_linear.weft", "rms_norm_linear.fused.weft",
                                         "gated_mlp.weft", "gated_mlp.fused.weft",
                                         "gqa_attention.weft", "gqa_attention.fused.weft",
                                         "movement.fused.weft"));

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

// Full-size examples: every file in examples/ (about 3 s of CPU, mostly the interpreter).
TEST(CpuBackend, MatchesInterpreterOnEveryExample) {
  // Sanitized builds run the interpreter ~10x slower; the test-size programs above cover the
  // same code paths there.
  if (kSanitized) GTEST_SKIP() << "full-size examples are skipped in sanitized builds";
  int n = 0;
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(weft::test::source_dir() + "/examples"))
    if (e.path().extension() == ".weft") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    expect_matches_interpreter(load(f));
    ++n;
  }
  EXPECT_GE(n, 6);
}

// Every verified µGraph a (small, state-bounded, hence deterministic) search returns runs on the
// CPU backend with the interpreter's results.
TEST(CpuBackend, MatchesInterpreterOnSearchResults) {
  if (kSanitized) GTEST_SKIP() << "the search is too slow in sanitized builds";
  SearchConfig config;
  config.target = "cpu";
  config.time_budget_s = 0;
  config.state_budget = 200000;
  config.threads = 1;
  config.top_k = 3;
  int checked = 0;
  for (const char* name : {"gated_mlp.weft", "rms_norm_linear.weft"}) {
    OptimizeResult r = optimize(load(small(name)), config);
    for (const RankedCandidate& c : r.top) {
      SCOPED_TRACE(c.text);
      expect_matches_interpreter(c.graph);
      ++checked;
    }
  }
  EXPECT_GE(checked, 1);
}

// `weft bench --check` compares the backend's outputs with the reference interpreter and says so
// in its JSON (the GPU path runs the same code with the dtype tolerance, in gpu-check).
TEST(CpuBackend, BenchChecksOutputsAgainstTheInterpreter) {
  auto [rc, out] = test::run_weft("bench " + small("gated_mlp.fused.weft") +
                                  " --backend cpu --check --json --reps 1 --warmup 0");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("\"matches_interpreter\": true"), std::string::npos) << out;
  EXPECT_NE(out.find("\"tolerance\": 0.0001"), std::string::npos) << out;
}

TEST(CpuBackend, CachesCompiledArtifactsByContent) {
  Graph g = load(small("gated_mlp.fused.weft"));
  auto a = compile_program(g, target_by_name("cpu"), Backend::cpu);
  auto b = compile_program(g, target_by_name("cpu"), Backend::cpu);
  EXPECT_TRUE(b->from_cache());
  EXPECT_EQ(a->artifact(), b->artifact());
  auto c = compile_program(load(small("gated_mlp.weft")), target_by_name("cpu"), Backend::cpu);
  EXPECT_NE(a->artifact(), c->artifact());
}

TEST(CpuBackend, RejectsWrongInputsAndGpuTargets) {
  Graph g = load(small("gated_mlp.weft"));
  auto prog = compile_program(g, target_by_name("cpu"), Backend::cpu);
  EXPECT_THROW(prog->run(std::vector<std::vector<float>>{{1.0f}}), UserError);
  EXPECT_THROW(compile_program(g, target_by_name("h100"), Backend::cpu), UserError);
}

TEST(CpuBackend, RunsAreDeterministic) {
  Graph g = load(small("gqa_attention.fused.weft"));
  auto prog = compile_program(g, target_by_name("cpu"), Backend::cpu);
  std::vector<std::vector<float>> in;
  for (const auto& t : random_inputs(g, 3)) in.emplace_back(t.data.begin(), t.data.end());
  auto first = prog->run(in);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(prog->run(in), first);
}

// Each block graph is a function of its block coordinates and arena: a weft_main that runs the
// blocks one at a time through K_block, in reverse order over one arena, computes the program.
TEST(CpuBackend, BlockFunctionsRunOneBlockAtATime) {
  Graph g = load(small("gqa_attention.fused.weft"));
  ProgramPlan plan = lower_graph(g, target_by_name("cpu"));
  const KernelPlan& k = plan.kernels.at(0);
  ASSERT_FALSE(k.library);
  ASSERT_GT(k.block_group, 1);  // the grid wrapper interleaves blocks; this test does not
  std::string src = generate_source(plan, Backend::cpu);
  const std::string call = "  k0(rt, T);\n";
  ASSERT_NE(src.find(call), std::string::npos);
  std::string one_at_a_time = fmt::format(
      "  {{\n"
      "    std::vector<float> arena(k0_smem_bytes / 4 + 1);\n"
      "    for (int64_t b = {} - 1; b >= 0; --b)\n"
      "      k0_block(T, b % {}, (b / {}) % {}, b / {}, arena.data());\n"
      "  }}\n",
      k.num_blocks(), k.grid[0], k.grid[0], k.grid[1], k.grid[0] * k.grid[1]);
  std::string edited = src;
  edited.replace(edited.find(call), call.size(), one_at_a_time);
  auto prog = build_program(plan, Backend::cpu, edited);
  auto inputs = random_inputs(g, 9);
  auto got = prog->run(host_buffers_of(inputs));
  auto want = evaluate_real(g, inputs, /*f32=*/false);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    Tensor<double> gt(want[i].shape, std::vector<double>(got[i].begin(), got[i].end()));
    Comparison c = compare_outputs(gt, want[i], /*f32=*/true);
    EXPECT_GT(c.max_ref, 0);
    EXPECT_TRUE(c.ok) << "output " << i << ": scaled error " << c.scaled_error;
  }
}

TEST(Timing, ReportsTheMedianOfRepetitions) {
  int calls = 0;
  Timing t = time_runs([&] { ++calls; }, 2, 5);
  EXPECT_EQ(calls, 7);
  EXPECT_EQ(t.reps, 5);
  EXPECT_LE(t.min_s, t.median_s);
  EXPECT_LE(t.median_s, t.max_s);
}

}  // namespace
}  // namespace weft
