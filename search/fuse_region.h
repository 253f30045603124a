// A set of a program's kernel-level operators as one graph-defined kernel, built by rule rather
// than searched: the operators' axes are matched up (elementwise operators join dims, matmuls join
// rows, columns and the contraction), the grid cuts axes no operator reduces, the for-loop walks
// one reduced axis whose reductions are sums (accumulated) — split over more blocks when the grid
// alone leaves SMs idle (split-K, split KV, with a combine) — and every schedule that fits the
// target is costed; the fastest is kept. The baselines (search/baselines.h) are made of these.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/target.h"
#include "ir/graph.h"

namespace weft {

struct FusedRegion {
  std::vector<ValueId> operands;  // program values the kernel reads, in order of first use
  std::vector<ValueId> results;   // program values it produces: used outside it, or outputs
  Graph body;                     // the block graph (of the partial kernel when split)
  // The region as a kernel graph (inputs: the operands, outputs: the results, named as in the
  // program): the one graph-defined kernel, or for a split reduction the partial kernel, the
  // sums of its partial results and the post-loop operators.
  Graph kernels;
  double predicted_s = 0;  // `kernels` alone on the target (cost/)
};

struct FuseOptions {
  int64_t max_blocks = 4096;     // most blocks of the grid
  int64_t max_loop = 64;         // longest for-loop
  int max_grid_dims = 2;         // grid dims in use
  int64_t threads = 128;         // threads per block (code generation only)
  bool split_reductions = true;  // also split the for-loop over more blocks (with a combine)
};

// Whether a rule-built block graph runs this operator, from its fusion pattern: elementwise and
// broadcast operators, contractions (accumulated), and reductions to one element per group
// (`to` = 1); not data movement, grouped reductions, composites or nested kernels.
bool region_runs(const Op& op);

// The fastest valid graph-defined kernel computing the operators `ops` (indices into
// `program.ops`, a convex set: no path leaves it and comes back) of a kernel graph; nullopt when
// the region holds an operator a block graph cannot run this way (data movement, grouped
// reductions, nested kernels), when its axes admit no schedule, or when no schedule fits the
// target (shared memory).
std::optional<FusedRegion> fuse_region(const Graph& program, const std::vector<int>& ops,
                                       const Target& target, const FuseOptions& options = {});

}  // namespace weft
