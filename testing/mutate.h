// Mutants of correct µGraphs, for testing the verifier: every single-point change of operator
// kinds, operands, dim maps, accumulators, loop ranges and rewrites that are only sometimes sound.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace weft {

struct Mutant {
  std::string description;  // "kernel O: fmap of 'x' 1 -> 0"
  Graph graph;
};

// All single-point mutants of `g` (nested bodies included) that still parse and type-check, in a
// deterministic order, without duplicates and without `g` itself. Some are equivalent to `g`
// (e.g. a commutative operand swap or a different for-loop range that still covers the data).
std::vector<Mutant> mutants(const Graph& g);

}  // namespace weft
