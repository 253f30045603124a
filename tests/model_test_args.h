// Seeded arguments of a model function at a shape binding, and a value's tensors in order: what
// the model tests run functions on.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "exec/vm.h"
#include "model/module.h"
#include "sym/evaluate.h"

namespace weft::test {

// Arguments for `fn` at `binding`: integers take their variable's value, `tokens` integers in
// [0, vocabulary), every other tensor seeded values in [-1, 1).
inline std::vector<VmValue> seeded_arguments(const Function& fn, const SymBinding& binding,
                                             uint64_t seed, int64_t vocabulary = 128) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(-1, 1);
  std::vector<VmValue> args;
  for (const Param& p : fn.params) {
    if (p.type.kind == MTypeKind::integer) {
      // Built in place: GCC 12 under -fsanitize=thread warns (falsely) that moving a VmValue
      // reads an uninitialized VmSlot.
      args.emplace_back().v = evaluate(*p.type.value, binding);
      continue;
    }
    Shape shape;
    for (const SymExpr& d : *p.type.dims) shape.push_back(evaluate(d, binding));
    Tensor<double> t(shape, std::vector<double>(static_cast<size_t>(numel(shape))));
    for (double& x : t.data)
      x = p.name == "tokens" ? static_cast<double>(rng() % static_cast<uint64_t>(vocabulary))
                             : uniform(rng);
    args.emplace_back().v = std::make_shared<Tensor<double>>(std::move(t));
  }
  return args;
}

// The tensors of `v` in order (tuples flattened).
inline void flatten(const VmValue& v, std::vector<const Tensor<double>*>& out) {
  if (const Tensor<double>* t = v.tensor()) out.push_back(t);
  if (const VmTuple* tu = v.tuple())
    for (const VmValue& x : *tu) flatten(x, out);
}

}  // namespace weft::test
