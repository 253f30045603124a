// The e-graph mode of the model rewrite (Tensat): each block's float table operators as an
// e-graph, every rule direction applied by e-matching until nothing changes or a cap is hit (all
// rewrites at once, so no order of them is ever committed to), then the cheapest graph extracted
// greedily class by class. docs/rewrites.md, "E-graph mode".
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/budget.h"
#include "model/module.h"
#include "rewrite/check_rule.h"
#include "rewrite/model_cost.h"
#include "rewrite/pattern.h"
#include "sym/prove.h"

namespace weft {

struct EGraphLimits {
  int64_t max_nodes = 20000;  // per block; stop reason state_budget beyond it
  int max_iterations = 16;    // rounds of matching every direction, then merging
  // Stop (reason converged) after this many rounds without a cheaper extraction (0: never):
  // rounds cost more as the e-graph grows, and what they add is mostly rearrangements.
  int patience = 2;
};

using ProgressFn = std::function<void(const std::string&)>;

struct EGraphRewrite {
  Function function;  // the extracted function (`f` itself when the e-graph found nothing cheaper)
  // Values of `f` read outside the rewritten part whose readers now read another value.
  std::map<std::string, std::string> renamed;
  std::vector<RewriteStep> steps;  // rule applications whose operators the extraction uses
  int64_t nodes = 0;               // e-nodes, all blocks
  int64_t classes = 0;
  int iterations = 0;
  StopReason stop = StopReason::complete;
};

// Saturates each block of `f` under `dirs` within `budget` and `limits`, and extracts the graph
// `cost` prices lowest (per class: its cheapest node, operands included). What it returns is not
// yet checked (check_rewritten_function does that before it is used).
EGraphRewrite egraph_rewrite_function(const Function& f, const std::vector<RuleDirection>& dirs,
                                      ModelCost& cost, const EGraphLimits& limits,
                                      const Budget& budget, SymProver& prover,
                                      BaseVerdicts& base_verdicts, uint64_t seed,
                                      const ProgressFn& progress = {});

}  // namespace weft
