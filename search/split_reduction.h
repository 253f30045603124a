// Split-reduction variants of a block graph (split-K, FlashDecoding's split KV): the for-loop's
// range is divided over f blocks along an unused grid dim, the block graph saves its accumulators
// as per-block partial results, and the kernel graph sums the partials (`sum(.., to=tile)`) and
// applies the post-loop operators to the totals.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "search/block_search.h"
#include "search/config.h"
#include "search/expr_oracle.h"
#include "search/stype.h"

namespace weft {

// A kernel-level operator after the partial kernel. Operand numbers: v < partial.saves.size() is
// the partial kernel's output v; otherwise tail result v - partial.saves.size().
struct TailOp {
  OpKind kind = OpKind::sum;
  std::vector<int> inputs;
  int8_t dim = -1;
  int16_t constant = -1;
  int64_t to = 1;
};

struct SplitVariant {
  BlockSketch partial;  // output types, terms and partial-result dims filled in
  std::vector<TailOp> tail;
  // Per value of the original block graph: its operand number in the tail's numbering (the
  // combined accumulators and the post-loop results), or -1.
  std::vector<int> kernel_value;
};

// Type and abstract term of every value of a block graph (iterators first, then each operator),
// recomputed from its operands and schedule.
struct ReplayedValue {
  SType type;
  TermRef term = 0;
};
std::vector<ReplayedValue> replay_block_graph(const BlockSketch& sk,
                                              const std::vector<TensorType>& operand_types,
                                              const std::vector<TermRef>& operand_terms,
                                              const SearchConstants& constants, ExprOracle& oracle);

// Every split of `sk`'s for-loop over f > 1 blocks (f divides the loop range, at least two
// iterations stay per block, the grid stays within config.max_blocks), when sk has a free grid
// dim, sums its iterations with accum_sum only, and its post-loop operators read accumulators and
// each other only. Empty when none applies. The caller checks the resulting kernel graph's
// outputs against the program (types and abstract expressions), as for any candidate.
std::vector<SplitVariant> split_reduction_variants(const BlockSketch& sk,
                                                   const std::vector<TensorType>& operand_types,
                                                   const std::vector<TermRef>& operand_terms,
                                                   const SearchConfig& config,
                                                   const SearchConstants& constants,
                                                   ExprOracle& oracle);

// The tail of split variant `var` of `original` (pushed as kernel operators after the partial
// kernel) as one graph-defined kernel over the partials, FlashDecoding's combine step: the
// original grid, a loop of one, each block combining its tiles and applying the post-loop
// operators, saved as `original` saved them. `value(v)`: the type and term of operand number v
// in the tail's numbering (the partial kernel's outputs, then the tail's results).
BlockSketch combine_kernel(const BlockSketch& original, const SplitVariant& var,
                           const std::function<ReplayedValue(int)>& value);

}  // namespace weft
