// The optimize pipeline as a library call: search µGraphs equivalent (by abstract expression) to a
// program, keep the valid ones, rank them with the cost model, verify the best in order (finite
// fields, then floating point) until the top-k are proven, with budgets (the time budget covers
// search and verification), checkpoints, progress reported to a callback and a cancellation hook.
// It prints nothing: the CLI (tools/weft) and bindings present the progress and the result;
// driver/optimize_report writes the result files.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "driver/checkpoint.h"
#include "ir/graph.h"
#include "search/config.h"
#include "search/stats.h"

namespace weft {

struct RankedCandidate {
  Graph graph;
  std::string text;  // canonical printed form (no type comments)
  // Where it came from: "search", "baseline:RULE" (search/baselines.h), "partition"
  // (subprograms searched apart and stitched: search/partition.h), or "seed:RULE+search" (a
  // baseline with part of it searched again: search/seed_neighbourhoods.h), "+merged" when
  // kernels across the stitches were merged.
  std::string origin = "search";
  double predicted_s = 0;
  double found_s = 0;  // search time when it was found (in this run)
  // Admitted by an oracle whose saturation stopped at a limit without being proven in it
  // (AbsExprOracle::proven): ranked, and verified, after every proven candidate.
  bool unproven = false;
  VerifiedRecord verification;
};

struct OptimizeResult {
  SearchConfig config;  // the configuration searched with
  Graph program;        // the input, composites expanded
  double program_predicted_s = 0;
  double roofline_s = 0;
  std::vector<RankedCandidate> top;  // verified and numerically acceptable, fastest first

  // Search figures.
  int64_t states = 0, pruned_expr = 0, pruned_bound = 0, block_graphs = 0;
  int64_t candidates = 0;        // equivalent by abstract expression
  int64_t baselines = 0;         // rule-built candidates, before the search (search/baselines.h)
  int64_t split_candidates = 0;  // of which split-reduction variants (split_reduction.h)
  int64_t screened = 0;          // a constant out of place (search/constant_screen.h): not costed
  int64_t unproven = 0;          // admitted by an incomplete oracle, not proven by it (ranked last)
  int64_t invalid = 0;           // rejected by the checker on the target (e.g. shared memory)
  int64_t verified = 0;          // passed the finite-field tests
  int64_t rejected = 0;          // failed them (not equivalent / outside Lax)
  int64_t numerically_rejected = 0;
  int64_t tests = 0;       // finite-field tests run
  int64_t unverified = 0;  // ranked below the top-k or past the time budget: never verified
  int64_t abandoned = 0;   // of those, verifications cut in flight at the time budget
  // The time budget (config.time_budget_s) covers the whole run. Before the search, one
  // finite-field test of the input program is timed (`test_s`; the verifier keeps its results)
  // and the search gets the budget less a reserve for verifying the top-k (`search_budget_s`);
  // verification then stops at the budget once one candidate is verified
  // (`verification_stopped`: fewer than top_k in `top` although more candidates were left).
  // All zero without a time budget.
  double search_budget_s = 0, verify_reserve_s = 0, test_s = 0;
  // How far the search ran past `search_budget_s` (its stop checks' latency, stretched on a
  // loaded machine); verification's deadlines move by as much, so it keeps its whole reserve.
  double search_late_s = 0;
  bool verification_stopped = false;
  int64_t verdicts_reused = 0;  // verdicts taken from the checkpoint, not verified again
  bool oracle_complete = true;
  // Iterative deepening (search/kernel_search.cpp): kernel-graph sizes reached, and ended early
  // by their share of the time budget or by convergence.
  int levels_reached = 0, levels_cut = 0, levels_converged = 0;
  // Why candidates failed verification (the verdict and its message), with counts: a verifier
  // limit (e.g. a program too deep for the finite-field test) shows here.
  std::map<std::string, int64_t> rejections;
  // Subprograms searched apart (search/partition.h); empty when the program was searched whole.
  struct Part {
    std::vector<std::string> ops;  // the program's value names the part computes, in order
    std::string rule;
    bool searched = false;
    StopReason stop = StopReason::complete;
    int64_t states = 0, candidates = 0;
    double budget_s = 0, search_s = 0;
    double input_predicted_s = 0;
    double best_predicted_s = 0;  // its verified best (the part's own ops when none)
    std::string best_origin;      // "search", "baseline:RULE", or "input" (nothing verified)
  };
  std::vector<Part> partition;
  // `--baselines seed`: the baselines' neighbourhoods searched (search/seed_neighbourhoods.h),
  // one per distinct subprogram, in order; `rule` is "seed:RULE", `ops` the base program's
  // values it computes, and `input_predicted_s` those operators as the baseline built them.
  std::vector<Part> seeds;
  // Why the search stopped; `interrupted` when OptimizeOptions::should_stop asked for it.
  StopReason stop = StopReason::complete;
  // Memory (search/memory_account.h). The accounted peak is the same on every run that completes
  // (sampled between batches of block searches); a stopped run's includes what workers held.
  int64_t memory_budget_bytes = 0;  // 0: unlimited
  int64_t peak_accounted_bytes = 0;
  int64_t memo_truncated = 0;  // schedules whose block graphs the full memo did not all keep
  int64_t peak_rss_bytes = 0;  // the process's resident peak at the end of the search
  double search_s = 0, verify_s = 0, wall_s = 0;
  double best_found_s = 0;  // when the fastest candidate (verified or not) was found
  bool resumed = false;     // from the checkpoint file
};

// Where a running optimize stands: what a progress display shows.
struct OptimizeProgress {
  enum class Phase {
    search,  // about every OptimizeOptions::progress_interval_s, and once when the search ends
    verify,  // after each candidate's verification, in rank order
  };
  Phase phase = Phase::search;
  bool search_done = false;  // the search phase's last report (its figures are final)
  double elapsed_s = 0;      // since the search started
  int64_t states = 0;
  int64_t pruned = 0;  // by abstract expressions and by the operator budget
  int64_t block_graphs = 0;
  int64_t candidates = 0;           // distinct candidates valid on the target, so far
  double best_predicted_s = 0;      // the fastest of them; 0: none yet
  int64_t memory_held_bytes = 0;    // accounted (search/memory_account.h)
  int64_t memory_budget_bytes = 0;  // 0: unlimited
  // Verification (phase verify): candidates checked so far and how many of them made the top-k
  // (of `wanted`, the configuration's top_k); `verify_stopped` in the last report when the time
  // budget ended verification before the top-k were verified.
  int64_t checked = 0;
  int64_t kept = 0;
  int64_t wanted = 0;
  bool verify_stopped = false;
  // A partitioned program (search/partition.h): which part is being searched (1-based; 0: the
  // whole program), of how many; with `seed`, which of the baselines' neighbourhoods instead
  // (search/seed_neighbourhoods.h).
  int part = 0, parts = 0;
  bool seed = false;
};

struct OptimizeOptions {
  // Resume from this file when it holds a search of the same program and configuration, and save
  // progress there every config.checkpoint_interval_s and at the end. Empty: no checkpoint.
  std::string checkpoint_path;
  // Receives progress. During the search it is called from a helper thread (never two calls at
  // once); the search's last report and the verification reports come from the calling thread.
  std::function<void(const OptimizeProgress&)> on_progress;
  double progress_interval_s = 1.0;
  // Polled about every 50 ms during the search (from the helper thread); when it returns true the
  // search stops with reason `interrupted` and the candidates found so far are ranked and verified
  // as after any budget stop, so the result holds what was found. Verification is not cut short
  // by it (only by the time budget).
  std::function<bool()> should_stop;
};

// Runs the pipeline. Bad input (an invalid program, an unknown target, a corrupt checkpoint) is a
// UserError; an exception thrown by a callback stops the search and is rethrown here.
OptimizeResult optimize(const Graph& program, const SearchConfig& config,
                        const OptimizeOptions& options = {});

// Verifies a result obtained elsewhere (a cache entry) against `program` as optimize() verifies
// its top candidates: finite-field tests to config.target_error with config.seed, and the
// floating-point check. A verifier limit is reported in `detail`, never thrown.
VerifiedRecord verify_result(const Graph& program, const Graph& candidate,
                             const SearchConfig& config);

}  // namespace weft
