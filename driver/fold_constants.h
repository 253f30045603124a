// Folding at compile time: the bindings of a function computed from parameters whose values the
// compile has (an imported model's weights) alone — TASO's weight-only subgraphs, such as the
// concatenated weights of merged projections — computed once by the VM and passed as new
// parameters instead. What folds is rewrite/model_cost.h's folds_at_compile_time, the rule the
// rewrite search priced them by.
#pragma once

#include <map>
#include <set>
#include <string>

#include "core/tensor.h"
#include "model/module.h"
#include "sym/prove.h"

namespace weft {

struct FoldResult {
  Module module;  // deduced
  // The new parameters' values, by name (each a folded binding's name).
  std::map<std::string, Tensor<double>> folded;
  int bindings = 0;  // bindings folded away
};

// Folds every function of `module` (deduced) whose parameters `values` names.
FoldResult fold_constants(const Module& module, const std::map<std::string, Tensor<double>>& values,
                          SymProver& prover);

// Folds the functions `specialized` (fixed-shape copies made by the specialize step, which their
// dispatcher calls): what their fixed sizes make constant (a range over the sequence, the
// attention mask's index arithmetic, reshapes of weights) is computed once. A folded value
// becomes a parameter `FUNCTION.VALUE` of the function and of each function calling it, which
// passes it on (a function whose caller is itself called is left as it is).
FoldResult fold_specialized(const Module& module, const std::set<std::string>& specialized,
                            const std::map<std::string, Tensor<double>>& values, SymProver& prover);

}  // namespace weft
