// The search configuration: one typed struct with defaults, overridable from a JSON file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/ops.h"

namespace weft {

struct SearchConfig {
  std::string target = "h100";

  // Sizes of the explored µGraphs.
  int max_kernel_ops = 5;             // operators in the kernel graph (graph-defined ones included)
  int max_kernel_operands = 3;        // operands of one graph-defined kernel
  int max_block_ops = 11;             // operators in a block graph, iterators and savers excluded
  int max_graph_defined_kernels = 2;  // graph-defined kernels per µGraph
  int max_block_outputs = 2;          // savers per block graph
  int max_grid_dims = 2;              // grid dims in use (1..3)
  // A kernel whose outputs feed later kernel operators: block graphs with the same outputs
  // (types, terms, axes) are interchangeable above it, so per schedule only the one with the least
  // work is kept, and kernel graphs are built above at most this many of them (those of the
  // schedules with the least estimated traffic).
  int intermediate_variants = 4;

  // Schedules. Grid sizes, for-loop ranges and maps are all divisors derived from the shapes;
  // these bounds only cap them.
  int64_t min_blocks = 1;
  int64_t max_blocks = 4096;
  int64_t max_loop = 64;
  std::vector<int64_t> threads_per_block = {128, 256};  // code-generation choices kept per kernel

  // Operator sets. Reductions reduce to size 1; with reduce_to_groups a kernel-level sum may also
  // combine per-block partial results (a dim an omap filled with one tile per block of a reduced
  // axis) to one tile's size: the combine step of split-K and FlashDecoding.
  std::vector<OpKind> kernel_ops = {OpKind::matmul, OpKind::add,   OpKind::mul,  OpKind::div,
                                    OpKind::exp,    OpKind::sqr,   OpKind::sqrt, OpKind::silu,
                                    OpKind::sum,    OpKind::scale, OpKind::shift};
  std::vector<OpKind> block_ops = {OpKind::matmul, OpKind::add,   OpKind::mul,  OpKind::div,
                                   OpKind::exp,    OpKind::sqr,   OpKind::sqrt, OpKind::silu,
                                   OpKind::sum,    OpKind::scale, OpKind::shift};
  std::vector<OpKind> accumulators = {OpKind::accum_sum};
  bool reduce_to_groups = true;
  // Also try each final-mode block graph with its for-loop spread over more blocks (a new grid
  // dim), saving partial accumulators that kernel operators then combine (split_reduction.h).
  bool split_reductions = true;

  // Budgets. 0 means unlimited.
  double time_budget_s = 600;
  int64_t state_budget = 0;
  // Megabytes the search may hold in what grows with it (memo of block graphs, candidates,
  // abstract-expression terms; search/memory_account.h). At 80% the memo stops taking new
  // intermediate-mode block graphs; past 100% the search stops ("memory budget").
  int64_t memory_budget_mb = default_memory_budget_mb();
  int threads = 0;      // 0: all hardware threads
  bool pruning = true;  // abstract-expression pruning (off only to measure what it buys)

  // Verification.
  double target_error = 0x1p-60;
  uint64_t seed = 1;
  int top_k = 5;

  // Checkpointing.
  std::string checkpoint_path;
  double checkpoint_interval_s = 10;

  // Half the physical memory available to this process (core/system_memory.h), in megabytes;
  // 4096 where it cannot be read.
  static int64_t default_memory_budget_mb();

  nlohmann::json to_json() const;
  // Overrides fields present in `j`; unknown keys or bad values are UserErrors naming the key.
  void merge_json(const nlohmann::json& j, const std::string& origin);
  static SearchConfig load(const std::string& path);  // defaults overridden by a JSON file
};

}  // namespace weft
