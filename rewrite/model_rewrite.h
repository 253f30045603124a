// Rewriting a model with generated rules: per function, TASO's cost-directed backtracking search
// over the graphs the rules reach in either direction (a priority queue by predicted time, graphs
// kept while within alpha of the best, each graph once: a hash blind to value names), or Tensat's
// equality saturation with greedy extraction (rewrite/model_egraph.h), within one budget; the best
// graph is used only after the finite-field check of what it changed. docs/rewrites.md.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "core/budget.h"
#include "core/target.h"
#include "model/module.h"
#include "rewrite/check_rewrite.h"
#include "rewrite/model_egraph.h"
#include "rewrite/rule.h"
#include "sym/evaluate.h"
#include "sym/prove.h"

namespace weft {

enum class RewriteMode { none, backtrack, egraph };
const char* rewrite_mode_name(RewriteMode mode);
// "none" | "backtrack" | "egraph"; UserError naming the choices otherwise.
RewriteMode rewrite_mode_from_name(const std::string& name);

struct ModelRewriteOptions {
  // The e-graph by default: on the corpus it reaches the backtracking search's graph (or a
  // cheaper one) in a tenth of the time (docs/benchmarks.md, "The e-graph mode").
  RewriteMode mode = RewriteMode::egraph;
  double alpha = 1.05;          // graphs up to alpha x the best predicted time stay in the queue
  double time_budget_s = 10;    // over the whole model (0: unlimited)
  int64_t state_budget = 2000;  // backtrack: graphs per function (0: unlimited)
  EGraphLimits egraph;          // egraph: e-nodes per block, rounds of rule application
  std::string target = "cpu";   // whose cost model judges
  SymBinding at;                // sizes to predict and check at (see representative_binding)
  int64_t fallback_size = 64;   // a variable `at` does not bind
  uint64_t seed = 1;            // the finite-field check
  // Parameters whose values the compile has (an imported model's weights): what is computed from
  // them alone is folded at compile time, so it costs nothing (rewrite/model_cost.h).
  std::set<std::string> constants;
  std::function<void(const std::string&)> progress;  // a line per function
};

struct FunctionRewrite {
  std::string function;
  double before_s = 0, after_s = 0;  // predicted, each table operator its own kernel
  int kernels_before = 0, kernels_after = 0;
  RewriteMode mode = RewriteMode::backtrack;
  bool used = false;               // the function was replaced by the search's best graph
  std::vector<RewriteStep> steps;  // of the graph used (empty: the function as it was)
  int64_t graphs = 0;              // graphs the search reached (egraph: e-nodes)
  int64_t classes = 0;             // egraph: e-classes
  int iterations = 0;              // egraph: rounds of rule application
  StopReason stop = StopReason::complete;
  RewriteCheck check;    // of the best graph (verdict error with no steps: not checked)
  std::string rejected;  // why the best graph was not used, when it was not
  double search_s = 0;
};

struct ModelRewriteResult {
  Module module;
  std::vector<FunctionRewrite> functions;
  StopReason stop = StopReason::complete;
  double wall_s = 0;
  int rewrites() const;
};

// Rewrites every function of `module` (deduced) with `rules` in both directions. The result's
// module passes check_module; a function whose best graph fails its check stays as it was.
ModelRewriteResult rewrite_model(const Module& module, const std::vector<Rule>& rules,
                                 const ModelRewriteOptions& options, SymProver& prover);

// "fn main: 4 rewrites (rule 12, rule 40 reversed, ...), 31 -> 28 kernels, 41.2 -> 37.0 us
// predicted, 210 graphs, complete, checked 2^-120": a line per function.
std::string rewrite_summary(const ModelRewriteResult& result);

}  // namespace weft
