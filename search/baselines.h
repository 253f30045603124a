// Baseline candidates, built by rule before the search so that optimize always has an answer no
// slower than its input: the input program itself (one kernel per operator, library matmuls) and
// fusions of it into graph-defined kernels (search/fuse_region.h) by general patterns —
// elementwise/reduction chains, matmuls with their elementwise prologues and epilogues, and
// row scales (a normalisation's division) moved past the matmul so the normalisation runs in the
// matmul's kernel. They are checked, costed and verified like every searched candidate.
#pragma once

#include <string>
#include <vector>

#include "core/target.h"
#include "ir/graph.h"
#include "search/config.h"
#include "search/fuse_region.h"

namespace weft {

struct BaselineCandidate {
  std::string rule;  // which rule built it: "input", "chains", "matmul-epilogues", ...
  Graph graph;       // a kernel graph with the program's inputs and outputs
  // What the rule fused, so the search can start from it (`--baselines seed`,
  // search/seed_neighbourhoods.h): the program it fused (the input, or the input after
  // hoist_row_scales), and each fusion's operators (indices into `base.ops`) with its kernels.
  // Empty for the input program.
  Graph base;
  std::vector<std::vector<int>> fused_ops;
  std::vector<FusedRegion> fused;
};

// The rules, in the order baseline_candidates applies them (each is also a candidate on its own).
struct BaselineRule {
  std::string name;
  std::string doc;
};
const std::vector<BaselineRule>& baseline_rules();

// The regions (op indices of `program`) one rule fuses, before any schedule is chosen. Exposed
// for the rules' unit tests.
std::vector<std::vector<int>> baseline_regions(const Graph& program, const std::string& rule);

// matmul(x / r, w) -> matmul(x, w) / r (and mul, and the second operand's column scales) wherever
// r is constant along the contraction, so a normalisation's reduction can run in the matmul's
// for-loop. Returns the program unchanged where nothing matches.
Graph hoist_row_scales(const Graph& program);

// The schedule limits a search configuration puts on rule-built kernels (the search's own).
FuseOptions fuse_options(const SearchConfig& config);

// Every baseline of `program` (composites expanded), distinct, the input program first. Cheap:
// a few milliseconds for programs of tens of operators.
std::vector<BaselineCandidate> baseline_candidates(const Graph& program, const Target& target,
                                                   const FuseOptions& options = {});

}  // namespace weft
