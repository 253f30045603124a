// The model layer's implementations of the model-only operators (rows of class `model` in the
// operator table, ir/ops.h), which the µGraph layers never see (they reach the superoptimizer only
// as partition boundaries): each one's symbolic shape rule, CPU semantics or composite expansion,
// keyed by kind.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "interp/tensor.h"
#include "ir/attrs.h"
#include "ir/ops.h"
#include "model/deduce.h"

namespace weft {

// Symbolic shape rule: operand types (tensors, checked) and completed attributes to result type.
using ModelInferFn = MType (*)(DeduceContext& ctx, const std::vector<MType>& in,
                               const MAttrs& attrs);
// CPU semantics on concrete tensors with evaluated attributes; throws UserError for bad data
// (an embedding index out of range).
using ModelEvalFn = Tensor<double> (*)(const std::vector<const Tensor<double>*>& in,
                                       const Attrs& attrs);

// A composite's expansion into primitive bindings (the last one binds `b.var`); `fresh(suffix)`
// names an intermediate without clashing with the function's names. Types are deduced after.
using ModelExpandFn =
    std::vector<Binding> (*)(const Binding& b, const std::vector<MType>& in,
                             const std::function<std::string(const char*)>& fresh);

// A model-only operator's implementation, attached to its row of the operator table by kind:
// the row (ir/ops.h) says its name, arity, attributes and documentation, this says how the model
// layer deduces and runs it.
struct ModelOpImpl {
  ModelInferFn infer = nullptr;
  ModelEvalFn eval = nullptr;      // null for a composite: it runs as its expansion
  ModelExpandFn expand = nullptr;  // composites only (model/expand.h applies it)
};

// The implementation of a model-only operator (class OpClass::model); null for every other row.
// Checked when first built: every model-only row has one, with a shape rule and either CPU
// semantics or an expansion.
const ModelOpImpl* model_impl(OpKind kind);
// The implementations model_ops_onnx.cpp defines (ONNX's operators beyond the transformer set).
std::vector<std::pair<OpKind, ModelOpImpl>> onnx_model_op_impls();

}  // namespace weft
