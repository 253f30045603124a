// Helpers for tests that drive the kernel search directly (see search_test_util.h).
#include "tests/search_test_util.h"

#include "search/absexpr_oracle.h"
#include "search/kernel_search.h"

namespace weft::test {

void search_candidates(const Graph& program, const SearchConfig& config,
                       const std::function<bool(Graph&&)>& take, SearchStats& stats,
                       ExprOracle* given_oracle) {
  const Target& target = target_by_name(config.target);
  AbsExprOracle own_oracle(program);
  ExprOracle& oracle = given_oracle ? *given_oracle : own_oracle;
  // The configuration's budget (its state budget, its time as the kernel search's levels' slices);
  // the candidates come within seconds.
  StopSignal stop(config.budget());
  SearchConstants constants = constants_of(program);
  DimClasses classes = analyze_dim_classes(program);
  BlockMemo memo;
  KernelSearchContext ctx{program, config, target, constants, classes,
                          oracle,  stats,  stop,   memo,      2};
  search_kernel_graphs(ctx, [&](Graph&& g) {
    if (take(std::move(g))) stop.stop(StopReason::state_budget);
  });
}

int count_kernels(const Graph& g) {
  int n = 0;
  for (const Op& op : g.ops) n += op.kind == OpKind::kernel;
  return n;
}

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

SearchConfig small_split_config() {
  SearchConfig config;
  config.max_block_ops = 7;
  config.max_grid_dims = 1;
  return config;
}

}  // namespace weft::test
