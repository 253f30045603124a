// Operators of the model level that the µGraph layers never see (they reach the superoptimizer
// only as partition boundaries): data movement with symbolic sizes, gathers, position-dependent
// operators. Each is declared once here with its attributes, symbolic shape rule and CPU
// semantics; the operators shared with µGraphs stay in ir/ops.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "interp/tensor.h"
#include "ir/attrs.h"
#include "ir/ops.h"
#include "model/deduce.h"

namespace weft {

enum class ModelOpKind : uint8_t {
  permute,
  embedding,
  rope,
  causal_mask,
  softmax_safe,
  slice,
  where,
  layer_norm,
  gelu_tanh,
  attention,
  // ONNX's operators beyond the transformer set (issue 15), rows in model_ops_onnx.cpp.
  conv,
  max_pool,
  avg_pool,
  max_pool_indices,
  global_avg_pool,
  global_max_pool,
  lrn,
  pow,
  gather,
  slice_steps,
  expand,
  fill,
  dims_tensor,
  cast,
  clip,
  abs,
  reciprocal,
  log,
  range,
  tile,
  pad,
};

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

struct ModelOpInfo {
  ModelOpKind kind;
  const char* name;
  int num_inputs;
  // Attribute kinds as in the table: integer and int_list values may be symbolic here.
  std::vector<AttrSpec> attrs;
  ModelInferFn infer;
  ModelEvalFn eval;  // null for a composite: it runs as its expansion
  const char* doc;
  ModelExpandFn expand = nullptr;  // composites only (model/expand.h applies it)
};

const std::vector<ModelOpInfo>& all_model_ops();
// The rows of the operators model_ops_onnx.cpp defines, appended to the table in kind order.
std::vector<ModelOpInfo> onnx_model_op_rows();
const ModelOpInfo& model_op_info(ModelOpKind kind);
std::optional<ModelOpKind> model_op_by_name(std::string_view name);

}  // namespace weft
