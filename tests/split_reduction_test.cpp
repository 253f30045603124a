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
#include "search/absexpr_oracle.h"
#include "search/kernel_search.h"
#include "verify/equivalence.h"
#include "tests/test_util.h"

namespace weft {
namespace {

Graph load_data(const std::string& name) {
  return test::load_graph_file(test::source_path("tests/data/" + name));
}

int count_kernels(const Graph& g) {
  int n = 0;
  for (const Op& op : g.ops) n += op.kind == OpKind::kernel;
  return n;
}

// A kernel op reading Q, K, V whose grid cuts the KV axis (K's dim 2) while its for-loop walks
// the rest of it: the partial-sum kernel of a split-KV µGraph.
bool cuts_kv_axis(const Graph& g) {
  for (const Op& op : g.ops) {
    if (op.kind != OpKind::kernel || op.inputs.size() != 3) continue;
    const Graph& block = *op.body;
    for (const Op& b : block.ops)
      if (b.kind == OpKind::iter && b.inputs[0] == block.inputs[1]) {
        std::vector<int64_t> imap = b.attrs.get_list("imap");
        for (int64_t d : imap)
          if (d == 2 && b.attrs.get_int("fmap") == 2) return true;
      }
  }
  return false;
}

// Runs the kernel search on `program` with `config`, passing each candidate to `take`, which
// returns true to stop the search.
void search(const Graph& program, const SearchConfig& config,
            const std::function<bool(Graph&&)>& take, SearchStats& stats) {
  const Target& target = target_by_name(config.target);
  AbsExprOracle oracle(program);
  StopSignal stop(120);  // a safety net: the candidates come within seconds
  SearchConstants constants = constants_of(program);
  DimClasses classes = analyze_dim_classes(program);
  BlockMemo memo;
  KernelSearchContext ctx{program, config, target, constants, classes,
                          oracle,  stats,  stop,   memo,      2};
  search_kernel_graphs(ctx, [&](Graph&& g) {
    if (take(std::move(g))) stop.stop(SearchStop::state_budget);
  });
}

SearchConfig small_split_config() {
  SearchConfig config;
  config.max_block_ops = 7;
  config.max_grid_dims = 1;
  return config;
}

TEST(SplitReduction, SearchEmitsVerifiedFlashDecodingCandidates) {
  Graph program = expand_composites(load_data("decode_attention_small.weft"));
  SearchConfig config = small_split_config();
  config.max_kernel_ops = 2;  // the partial kernel and the combine kernel
  config.max_graph_defined_kernels = 2;
  SearchStats stats;
  std::vector<Graph> fused_combine, predefined_combine;
  search(
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
  search(
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
