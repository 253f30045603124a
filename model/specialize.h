// Shape specialization of a model: copies of functions at fixed values of their symbolic
// variables (every type concrete, so their regions become fixed-shape µGraphs), and a dispatch at
// each entry function choosing the copy that matches the call's binding, falling back to the
// original body at any other binding.
#pragma once

#include <string>
#include <vector>

#include "model/module.h"

namespace weft {

struct Specialization {
  std::string function;  // the original
  SymBinding binding;    // its variables' values
  std::string name;      // the copy: FUNCTION.b1_n16 (the values in variable order)
  bool entry = false;    // dispatched to from the entry function of that name
};

struct SpecializeResult {
  Module module;  // deduced
  std::vector<Specialization> specializations;
  // Entry functions a binding did not specialize, and why ("decode at b=1, n=16: p is not
  // bound").
  std::vector<std::string> skipped;
};

// The variables of a function's parameter types, in name order: what a call binds.
std::vector<std::string> function_variables(const Function& f);

// Specializes `module` (deduced, composites expanded) at `bindings`: for each entry function
// (one no function calls) and each binding that gives all its variables a value (other values
// of the binding are ignored), a copy ENTRY.KEY with the values substituted everywhere (types,
// attributes, if conditions, match_cast types); its calls to functions go to copies of the
// callees at the values their arguments give (when those are all constants), made once per
// callee and values. Each entry that got a copy keeps its name and signature but its body
// becomes a chain of `if VAR == VALUE` over its variables that calls the matching copy (its
// result cast back to the declared return type), and ENTRY.generic (the original body)
// otherwise. The result passes check_module.
SpecializeResult specialize_module(const Module& module, const std::vector<SymBinding>& bindings,
                                   SymProver& prover);

}  // namespace weft
