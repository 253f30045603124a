// Helpers for tests that drive the kernel search directly: collecting its candidates, and
// recognising split-KV attention µGraphs among them.
#pragma once

#include <functional>

#include "ir/graph.h"
#include "search/config.h"
#include "search/expr_oracle.h"
#include "search/stats.h"

namespace weft::test {

// Runs the kernel search on `program` with `config`, passing each candidate to `take`, which
// returns true to stop the search. A safety-net time limit of 120 s applies. `oracle`: the
// abstract-expression oracle to search with (null: the program's AbsExprOracle).
void search_candidates(const Graph& program, const SearchConfig& config,
                       const std::function<bool(Graph&&)>& take, SearchStats& stats,
                       ExprOracle* oracle = nullptr);

// Graph-defined kernels in `g`.
int count_kernels(const Graph& g);

// A kernel op reading Q, K, V whose grid cuts the KV axis (K's dim 2) while its for-loop walks
// the rest of it: the partial-sum kernel of a split-KV µGraph.
bool cuts_kv_axis(const Graph& g);

// The search configuration the split-reduction tests narrow the space with (1 grid dim, at most
// 7 block operators).
SearchConfig small_split_config();

}  // namespace weft::test
