// The rule-built baselines as starting points of the search (`--baselines seed`): a baseline's
// neighbourhood is the baseline with one of its fused kernels, alone or joined with a unit next to
// it, handed back to the µGraph search as a subprogram while the rest stays as the rule built it.
// The search's best for the subprogram, stitched back, is a candidate of the whole program: the
// search improves on a rule's choice where the rule fused too much, too little, or badly.
#pragma once

#include <string>
#include <vector>

#include "core/target.h"
#include "ir/graph.h"
#include "search/baselines.h"
#include "search/partition.h"

namespace weft {

struct SeedNeighbourhood {
  std::string rule;  // the baseline's
  Graph base;        // the program the baseline fused (BaselineCandidate::base)
  // The baseline's units (each fusion, each operator it left alone) with the searched ones
  // joined into one, in an order in which each unit's inputs come before it, and each unit's
  // kernels in the baseline (for the searched unit: its own operators, `units[searched].graph`).
  std::vector<SubProgram> units;
  std::vector<Graph> kernels;
  size_t searched = 0;
  double baseline_predicted_s = 0;  // the searched unit's operators as the baseline built them
};

// The neighbourhoods of every baseline that fused something, the fastest baselines' first and
// within a baseline its slowest fusions first: each fusion alone, then with each unit it reads
// from or feeds where the two together leave no path out and back in. A neighbourhood that would
// hand the search the whole program is left out (the search of the whole program covers it).
std::vector<SeedNeighbourhood> seed_neighbourhoods(const std::vector<BaselineCandidate>& baselines,
                                                   const Target& target);

// The baseline with the searched unit replaced by `searched` (a kernel graph with that unit's
// inputs and outputs, in order): a kernel graph of the whole program.
Graph stitch_seed(const SeedNeighbourhood& n, const Graph& searched);

}  // namespace weft
