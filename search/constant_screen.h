// The screen before verification: abstract expressions with constants as terms (a scale's
// factor, a mean's 1/k), so a candidate whose only difference from the program is a constant in
// the wrong place, which the search's constant-blind pruning lets through (notes §2, as in
// Mirage), is turned away without a finite-field test.
#pragma once

#include <memory>
#include <vector>

#include "absexpr/oracle.h"
#include "absexpr/term.h"
#include "ir/graph.h"

namespace weft {

class ConstantScreen {
 public:
  // `program` must have its composites expanded.
  explicit ConstantScreen(const Graph& program, const SaturationLimits& limits = {});
  // False when `candidate` (a kernel graph with the program's inputs and outputs, in order)
  // cannot be equivalent to the program: an output's expression is not A_eq-equal to the
  // program's once constants count. Only a saturated e-graph says false (Theorem 1's argument:
  // a truncated one may miss equal forms).
  bool may_be_equivalent(const Graph& candidate);

 private:
  TermStore store_{true};
  std::vector<std::unique_ptr<Oracle>> oracles_;
};

}  // namespace weft
