// What a rewrite of a model function is judged by: the predicted time of its table operators at
// one binding of its symbolic variables, each operator its own kernel on the target (the
// per-operator program the partitioner and the superoptimizer start from; TASO's sum of operator
// costs). Model operators, library functions, calls and structure count nothing: no rule changes
// them.
#pragma once

#include <map>
#include <string>

#include "core/target.h"
#include "model/module.h"
#include "sym/evaluate.h"

namespace weft {

class ModelCost {
 public:
  ModelCost(const Target& target, SymBinding at) : target_(target), at_(std::move(at)) {}
  // Seconds of binding `b` (operand types from `types`).
  double binding_s(const Binding& b, const std::map<std::string, MType>& types);
  // Seconds and kernel launches of all of `f`'s top-level bindings.
  double function_s(const Function& f);
  int kernels(const Function& f);
  const SymBinding& at() const { return at_; }

 private:
  struct Entry {
    double seconds = 0;
    int kernels = 0;
  };
  Entry entry(const Binding& b, const std::map<std::string, MType>& types);
  Entry totals(const Function& f);
  const Target& target_;
  SymBinding at_;
  std::map<std::string, Entry> cache_;
};

// A binding of `f`'s variables for predicting and checking: `given` where it binds them, else
// each variable at the smaller of its upper bound and `fallback` (at least its lower bound).
SymBinding representative_binding(const Function& f, const SymBinding& given, int64_t fallback);

}  // namespace weft
