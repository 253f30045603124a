// Enumeration of kernel graphs: pre-defined operators and graph-defined kernels (whose block
// graphs come from block_search) over the program's inputs, emitting every complete µGraph whose
// outputs are equivalent, by abstract expression, to the input program's.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "core/target.h"
#include "ir/graph.h"
#include "search/block_memo.h"
#include "search/block_search.h"
#include "search/config.h"
#include "search/dim_classes.h"
#include "search/expr_oracle.h"
#include "search/memory_account.h"
#include "search/stats.h"

namespace weft {

struct KernelSearchContext {
  const Graph& program;  // composites expanded
  const SearchConfig& config;
  const Target& target;
  const SearchConstants& constants;
  const DimClasses& classes;
  ExprOracle& oracle;
  SearchStats& stats;
  StopSignal& stop;
  BlockMemo& memo;
  int threads = 1;
  MemoryAccount* memory = nullptr;  // null: nothing counted, no memory budget
};

// Runs the search and calls `emit` with each candidate µGraph (deterministic order).
void search_kernel_graphs(const KernelSearchContext& ctx, const std::function<void(Graph&&)>& emit);

// The scale factors and shift offsets of a program (after composite expansion).
SearchConstants constants_of(const Graph& program);

}  // namespace weft
