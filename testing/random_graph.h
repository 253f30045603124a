// Generator of random valid µGraphs for property tests (round-trip, verifier, search).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace weft {

// Knobs of random_graph. The defaults give small graphs (tensors of at most a few thousand
// elements) that exercise every operator kind and every block-graph construct.
struct RandomGraphOptions {
  int max_inputs = 3;  // program inputs: 1..max_inputs
  int max_ops = 6;     // kernel-level statements: 1..max_ops (attempts; some may be skipped)
  int max_rank = 3;    // input ranks: 1..max_rank (reshape may reach max_rank too)
  std::vector<int64_t> dim_sizes = {1, 2, 4, 8, 3, 6};  // sizes for input dims
  int64_t max_elements = 4096;                          // no generated tensor is larger
  double kernel_prob = 0.35;     // chance a kernel-level statement is a graph-defined kernel
  bool allow_kernels = true;     // graph-defined kernels (block graphs) at all
  bool allow_composites = true;  // rms_norm / softmax
  bool allow_threads = true;     // thread ops inside block graphs
  int max_block_ops = 5;         // loop-stage ops per kernel body, besides iterators/accumulators
  int max_post_ops = 3;          // post-stage ops per kernel body, besides saves
  int max_saves = 2;             // results per graph-defined kernel
  std::vector<int64_t> grid_sizes = {1, 2, 4};
  std::vector<int64_t> loop_sizes = {1, 2, 4};
  std::vector<DType> dtypes = {DType::f32, DType::f16, DType::bf16};  // one is chosen per graph
};

// A random valid kernel graph, a pure function of (seed, options). Built with GraphBuilder, so
// it is well-typed; block graphs follow the stage rules of docs/format.md: loop-stage ops read
// loop-stage values only (iterators' chunks and their results), accumulators carry loop values
// to the post stage, post-stage ops read post values (accumulator results, post-stage iterators'
// slices, their results), and saves (post stage) map every grid dim of size > 1 to a distinct
// data dim. Program inputs come first; all loop-stage ops of a block graph precede its
// post-stage ops (the order the text format has).
Graph random_graph(uint64_t seed, const RandomGraphOptions& options = {});

}  // namespace weft
