// Tests of split-reduction candidates (FlashDecoding's split KV): the kernel search emits µGraphs
// whose first kernel spreads the KV loop over blocks and saves partial sums, combined afterwards
// either by pre-defined sums or by a second graph-defined kernel; they verify against the program.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "ir/expand_composites.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "search/kernel_search.h"
#include "tests/search_test_util.h"
#include "tests/test_util.h"
#include "tests/tiers.h"
#include "verify/equivalence.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

Graph load_data(const std::string& name) {
  return test::load_graph_file(test::source_path("tests/data/" + name));
}

using test::count_kernels;
using test::cuts_kv_axis;
using test::small_split_config;

TEST(SplitReduction, SearchEmitsVerifiedFlashDecodingCandidates) {
  Graph program = expand_composites(load_data("decode_attention_small.weft"));
  SearchConfig config = small_split_config();
  config.max_kernel_ops = 2;  // the partial kernel and the combine kernel
  config.max_graph_defined_kernels = 2;
  SearchStats stats;
  std::vector<Graph> fused_combine, predefined_combine;
  test::search_candidates(
      program, config,
      [&](Graph&& g) {
        if (!cuts_kv_axis(g)) return false;
        (count_kernels(g) == 2 ? fused_combine : predefined_combine).push_back(std::move(g));
        return fused_combine.size() >= 50;
      },
      stats);
  EXPECT_GT(stats.split_candidates.load(), 0);
  ASSERT_FALSE(fused_combine.empty());
  EXPECT_TRUE(predefined_combine.empty()) << "no room for pre-defined combines in 2 operators";
  // The first few verify against the program.
  for (size_t i = 0; i < std::min<size_t>(3, fused_combine.size()); ++i) {
    VerifyResult r = verify_equivalent(program, fused_combine[i]);
    EXPECT_EQ(r.verdict, Verdict::equivalent) << print_graph(fused_combine[i], true);
    EXPECT_LE(r.bound, 0x1p-60);
  }
}

TEST(SplitReduction, PredefinedCombineVerifiesToo) {
  Graph program = expand_composites(load_data("decode_attention_small.weft"));
  SearchConfig config = small_split_config();
  config.max_kernel_ops = 4;  // partial kernel, two sums, the division
  config.max_graph_defined_kernels = 1;
  SearchStats stats;
  std::vector<Graph> found;
  test::search_candidates(
      program, config,
      [&](Graph&& g) {
        if (cuts_kv_axis(g)) found.push_back(std::move(g));
        return found.size() >= 5;
      },
      stats);
  ASSERT_FALSE(found.empty());
  const Graph& g = found.front();
  EXPECT_EQ(count_kernels(g), 1);
  EXPECT_EQ(g.ops.size(), 4u) << print_graph(g, true);
  VerifyResult r = verify_equivalent(program, g);
  EXPECT_EQ(r.verdict, Verdict::equivalent) << print_graph(g, true);
}

}  // namespace
}  // namespace weft
