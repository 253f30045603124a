// The model layer's implementations of the model-only operators (rows of class `model` in the
// operator table, ir/ops.h), which the µGraph layers never see (they reach the superoptimizer only
// as partition boundaries): each one's symbolic shape rule, CPU semantics or composite expansion,
// keyed by kind.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
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
// Concrete sliding windows of conv and the pools over x = [N, C, *spatial], padded to 3 spatial
// dims (leading dims of extent 1): input, kernel, stride, dilation, pads and output extents.
struct Windows3 {
  int64_t in[3], k[3], s[3], d[3], pb[3], pe[3], out[3];
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t k_size() const { return k[0] * k[1] * k[2]; }
};
// The windows of `kernel` over `x` with the operator's strides, pads, dilations; UserError naming
// `op` when a window exceeds the padded input.
Windows3 concrete_windows(const Shape& x, const std::vector<int64_t>& kernel, const Attrs& attrs,
                          bool ceil_mode, const char* op);

// slice_steps at a concrete shape `x`: per dim the first element taken and the step between
// taken elements; `shape` receives the result's shape.
std::vector<std::pair<int64_t, int64_t>> slice_steps_take(const Shape& x, const Attrs& attrs,
                                                          Shape& shape);

// Cast targets by ONNX's TensorProto.DataType codes: the type's width in bits, whether it is
// signed, and the model dtype the result carries (f32 for what the model types cannot name:
// their values stay exact in the VM's doubles).
struct CastTarget {
  int64_t code;
  const char* name;
  enum Kind : uint8_t { f32, f64, f16, bf16, sint, uint, boolean } kind;
  int bits;
};
// The target of ONNX dtype code `code`; null for a code weft does not cast to.
const CastTarget* cast_target(int64_t code);

// Strides to read `operand` at the indices of a tensor of shape `out`: dims aligned at the
// right, stride 0 where the operand's dim is 1 or missing (ONNX multidirectional broadcasting).
std::vector<int64_t> broadcast_strides(const Shape& operand, const Shape& out);

// The implementations model_ops_onnx.cpp defines (ONNX's operators beyond the transformer set).
std::vector<std::pair<OpKind, ModelOpImpl>> onnx_model_op_impls();

}  // namespace weft
