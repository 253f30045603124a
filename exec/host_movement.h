// The VM's f32 lane for operators that only move values: `reshape`, `concat`, `repeat` and
// `split` (table rows) and `permute` (a model operator) on f32 (or f64) operands, the result in
// f32, without a round trip through the f64 paths or a one-operator µGraph.
#pragma once

#include <optional>
#include <vector>

#include "core/host_operand.h"
#include "ir/attrs.h"
#include "ir/ops.h"

namespace weft {

// `kind` applied to `in` with evaluated attributes `attrs`, written where `into` says; false (and
// `into` not called) for another operator or operands its shape rule refuses (the caller's own
// path reports those).
bool movement_on_host_f32(OpKind kind, const std::vector<HostOperand>& in, const Attrs& attrs,
                          const F32Destination& into);

// `split` of `x`: its parts as f32 tensors; nullopt where the shape rule refuses it.
std::optional<std::vector<Tensor<float>>> split_on_host_f32(const HostOperand& x,
                                                            const Attrs& attrs);

}  // namespace weft
