// What a rewrite of a model function is judged by: the predicted time of its table operators at
// one binding of its symbolic variables, each operator its own kernel on the target (the
// per-operator program the partitioner and the superoptimizer start from; TASO's sum of operator
// costs). Model operators, library functions, calls and structure count nothing: no rule changes
// them; nor do bindings computed from constants alone that the compile folds (TASO's weight-only
// subgraphs, computed once when the model is compiled).
#pragma once

#include <map>
#include <set>
#include <string>

#include "core/target.h"
#include "model/module.h"
#include "sym/evaluate.h"

namespace weft {

// Whether the compile computes binding `b` once instead of at every run: a table operator, a
// tuple or item whose operands are all `constants` (parameters whose values the compile has, and
// the values folded from them) and whose attributes are constants, its result of fixed shape and
// no larger than its operands together (a broadcast of a weight stays a run-time operator) or,
// for a bool, integer or f64 result (an attention mask from two position ranges), small; an
// operator of no operands (range) when its result is fixed and small.
bool folds_at_compile_time(const Binding& b, const std::map<std::string, MType>& types,
                           const std::set<std::string>& constants);
inline constexpr int64_t kLargestFoldedWithoutOperands = int64_t{1} << 16;

class ModelCost {
 public:
  // `constants`: parameters whose values the compile has (bindings folding from them are free).
  ModelCost(const Target& target, SymBinding at, std::set<std::string> constants = {})
      : target_(target), at_(std::move(at)), constants_(std::move(constants)) {}
  // Seconds and kernel launches of all of `f`'s top-level bindings.
  double function_s(const Function& f);
  int kernels(const Function& f);
  const SymBinding& at() const { return at_; }

  struct Entry {
    double seconds = 0;
    int kernels = 0;
  };
  // One binding as its own kernel (`types`: its operands'); zero for what is not a table operator.
  // Constants are not considered here (the caller knows what folds).
  Entry entry(const Binding& b, const std::map<std::string, MType>& types);
  const std::set<std::string>& constants() const { return constants_; }

 private:
  Entry totals(const Function& f);
  const Target& target_;
  SymBinding at_;
  std::set<std::string> constants_;
  std::map<std::string, Entry> cache_;
};

// A binding of `f`'s variables for predicting and checking: `given` where it binds them, else
// each variable at the smaller of its upper bound and `fallback` (at least its lower bound).
SymBinding representative_binding(const Function& f, const SymBinding& given, int64_t fallback);

}  // namespace weft
