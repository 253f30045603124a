// The VM's per-operator path for the elementwise table operators: computed straight on its tensors
// (f32 lane or f64) with the interpreter's f32 (or f64) semantics, without building a
// one-operator µGraph.
#pragma once

#include <optional>
#include <vector>

#include "core/host_operand.h"
#include "core/tensor.h"
#include "ir/attrs.h"
#include "ir/ops.h"

namespace weft {

// An elementwise table operator (a row with `real`: class unary or binary, or a model-only row
// such as where, pow or clip, of up to three operands) applied to `in` as the interpreter's
// f32 domain applies it: operands rounded to f32, the row's real semantics in double, the result
// rounded to f32, so the values are the interpreter's exactly. nullopt for any other operator and
// for operands the row's shape rule refuses (the caller reports those).
// The result is written where `into` says; false (and `into` not called) where not taken.
bool elementwise_on_host_f32(OpKind kind, const std::vector<HostOperand>& in, const Attrs& attrs,
                             const F32Destination& into);
// The same on f64 tensors, the result in f64: in the f32 domain (values as above) or, with
// `in_f32` false, in f64 with nothing rounded (integer, bool and f64 results).
std::optional<Tensor<double>> elementwise_on_host(OpKind kind,
                                                  const std::vector<const Tensor<double>*>& in,
                                                  const Attrs& attrs, bool in_f32 = true);

}  // namespace weft
