// The superoptimizer pipeline: search µGraphs equivalent (by abstract expression) to a program,
// keep the valid ones, rank them with the cost model, verify the best in order (finite fields,
// then floating point) until the top-k are proven, with budgets, progress and checkpoints.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "search/checkpoint.h"
#include "search/config.h"
#include "search/stats.h"

namespace weft {

struct RankedCandidate {
  Graph graph;
  std::string text;  // canonical printed form (no type comments)
  double predicted_s = 0;
  VerifiedRecord verification;
};

struct OptimizeResult {
  Graph program;  // the input, composites expanded
  double program_predicted_s = 0;
  double roofline_s = 0;
  std::vector<RankedCandidate> top;  // verified and numerically acceptable, fastest first

  // Search figures.
  int64_t states = 0, pruned_expr = 0, pruned_bound = 0, block_graphs = 0;
  int64_t candidates = 0;        // equivalent by abstract expression
  int64_t split_candidates = 0;  // of which split-reduction variants (split_reduction.h)
  int64_t invalid = 0;           // rejected by the checker on the target (e.g. shared memory)
  int64_t verified = 0;          // passed the finite-field tests
  int64_t rejected = 0;          // failed them (not equivalent / outside Lax)
  int64_t numerically_rejected = 0;
  int64_t tests = 0;       // finite-field tests run
  int64_t unverified = 0;  // ranked below the top-k, never needed verification
  bool oracle_complete = true;
  SearchStop stop = SearchStop::completed;
  // Memory (search/memory_account.h). The accounted peak is the same on every run that completes
  // (sampled between batches of block searches); a stopped run's includes what workers held.
  int64_t memory_budget_bytes = 0;  // 0: unlimited
  int64_t peak_accounted_bytes = 0;
  int64_t memo_truncated = 0;  // schedules whose block graphs the full memo did not all keep
  int64_t peak_rss_bytes = 0;  // the process's resident peak at the end of the search
  double search_s = 0, verify_s = 0, wall_s = 0;
  bool resumed = false;
};

struct OptimizeOptions {
  bool progress = false;      // a line on stderr every second
  bool progress_tty = false;  // redraw one line (stderr is a terminal) instead of appending
};

OptimizeResult optimize(const Graph& program, const SearchConfig& config,
                        const OptimizeOptions& options = {});

}  // namespace weft
