// The µGraphs the search returns, through the CUDA code generator: verified candidates of small
// searches are lowered for H100, run in host emulation and compared with the interpreter running
// the input program, so search-only shapes (split-reduction partial and combine kernels, strided
// `sum to`) are covered by the CUDA path before any GPU sees them.
#include <gtest/gtest.h>

#include "core/target.h"
#include "driver/optimize.h"
#include "ir/expand_composites.h"
#include "ir/printer.h"
#include "lower/pipeline.h"
#include "runtime/program.h"
#include "tests/emulation_check.h"
#include "tests/search_test_util.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit", "loads_generated");

namespace weft {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

// Runs `candidate` in CUDA host emulation on seeded inputs rounded to its dtypes and compares it
// with the interpreter running the input `program` (f64, same inputs) within each output dtype's
// tolerance: the candidate must compute the program, not merely agree with itself.
void expect_emulation_computes(const Graph& candidate, const Graph& program) {
  ProgramPlan plan = lower_graph(candidate, target_by_name("h100"));
  auto results =
      test::compare_emulation(program, plan, *load_program(plan, Backend::cuda_emulation), 5);
  ASSERT_EQ(results.size(), program.outputs.size());
  for (size_t i = 0; i < results.size(); ++i)
    EXPECT_TRUE(results[i].ok) << "output " << i << ": scaled error " << results[i].scaled_error
                               << " > " << results[i].tolerance;
}

TEST(CudaEmulation, MatchesInterpreterOnSearchResults) {
  if (kSanitized) GTEST_SKIP() << "the search is too slow in sanitized builds";
  SearchConfig config;
  config.target = "h100";
  config.time_budget_s = 0;
  config.state_budget = 200000;
  config.threads = 1;
  config.top_k = 3;
  int checked = 0;
  auto check_search = [&](const char* file, const SearchConfig& cfg) {
    SCOPED_TRACE(file);
    OptimizeResult r = optimize(test::load_graph_file(test::source_path(file)), cfg);
    EXPECT_FALSE(r.top.empty()) << "no verified candidate";
    for (const RankedCandidate& c : r.top) {
      SCOPED_TRACE(c.text);
      expect_emulation_computes(c.graph, r.program);
      ++checked;
    }
  };
  for (const char* file :
       {"tests/golden/lower/gated_mlp.weft", "tests/golden/lower/rms_norm_linear.weft",
        "tests/golden/lower/gqa_attention.weft"})
    check_search(file, config);
  EXPECT_GE(checked, 3);
}

// Partial results side by side along the KV dim, combined by `sum(t2, dim=2, to=16)`: element g
// sums g, g+16, ... (strided groups). The CUDA emitter once summed contiguous groups; each kernel
// alone still matched the interpreter, only the pair against the program showed it.
TEST(CudaEmulation, AStridedSumOfPartialResultsComputesTheProgram) {
  Graph split =
      test::load_graph_file(test::source_path("tests/data/split_kv_strided_combine.weft"));
  Graph program = test::load_graph_file(test::source_path("tests/golden/lower/gqa_attention.weft"));
  expect_emulation_computes(split, program);
}

// Split-KV attention (a partial kernel whose grid cuts the KV axis, then a combine kernel with a
// strided `sum to`): at test size it ranks below the single kernel, so its candidates are taken
// straight from the kernel search (tests/split_reduction_test.cpp verifies them).
TEST(CudaEmulation, SplitKvCandidatesComputeTheProgram) {
  if (kSanitized) GTEST_SKIP() << "the search is too slow in sanitized builds";
  Graph program = expand_composites(
      test::load_graph_file(test::source_path("tests/data/decode_attention_small.weft")));
  SearchConfig config = test::small_split_config();
  config.target = "h100";
  config.max_kernel_ops = 2;
  config.max_graph_defined_kernels = 2;
  SearchStats stats;
  std::vector<Graph> found;
  test::search_candidates(
      program, config,
      [&](Graph&& g) {
        if (test::cuts_kv_axis(g) && test::count_kernels(g) == 2) found.push_back(std::move(g));
        return found.size() >= 2;
      },
      stats);
  ASSERT_EQ(found.size(), 2u);
  for (const Graph& g : found) {
    SCOPED_TRACE(print_graph(g, true));
    expect_emulation_computes(g, program);
  }
}

}  // namespace
}  // namespace weft
