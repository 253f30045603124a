// The model layer's implementations of the model-only operators (rows of class `model` in the
// operator table, ir/ops.h), which the µGraph layers never see (they reach the superoptimizer only
// as partition boundaries): each one's symbolic shape rule, CPU semantics or composite expansion,
// keyed by kind. An elementwise row needs none here: its implementation comes from the row (its
// shape rule, and its real semantics applied element by element with broadcasting).
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/host_operand.h"
#include "core/tensor.h"
#include "ir/attrs.h"
#include "ir/ops.h"
#include "model/deduce.h"

namespace weft {

// Symbolic shape rule: operand types (tensors, checked) and completed attributes to result type.
using ModelInferFn =
    std::function<MType(DeduceContext& ctx, const std::vector<MType>& in, const MAttrs& attrs)>;
// CPU semantics on concrete tensors with evaluated attributes; throws UserError for bad data
// (an embedding index out of range).
using ModelEvalFn =
    std::function<Tensor<double>(const std::vector<const Tensor<double>*>& in, const Attrs& attrs)>;

// The same semantics with an f32 result (the VM's f32 lane), where an operator has it: operands
// read in place from either lane (a gather's table is not converted, nor copied; its indices
// stay exact), computed in double, stored in f32.
using ModelEvalF32Fn =
    std::function<Tensor<float>(const std::vector<HostOperand>& in, const Attrs& attrs)>;

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
  ModelEvalFn eval = nullptr;         // null for a composite: it runs as its expansion
  ModelExpandFn expand = nullptr;     // composites only (model/expand.h applies it)
  ModelEvalF32Fn eval_f32 = nullptr;  // optional, for operators on f32 tensors
};

// A call's attribute values as the shape rules read them (completed: present, of their kind).
inline const std::vector<SymExpr>& sym_list(const MAttrs& attrs, const char* name) {
  return std::get<std::vector<SymExpr>>(attrs.at(name));
}
inline const SymExpr& sym_int(const MAttrs& attrs, const char* name) {
  return std::get<SymExpr>(attrs.at(name));
}
// An integer attribute that must be a constant >= lo; `what` names it in the error.
int64_t const_int(DeduceContext& ctx, const SymExpr& e, const std::string& what, int64_t lo);

// The implementation of a model-only operator (class OpClass::model); null for every other row.
// Checked when first built: every model-only row has one, with a shape rule and either CPU
// semantics or an expansion (an elementwise row's from its row).
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

// Strides to read `operand` at the indices of a tensor of shape `out`: dims aligned at the
// right, stride 0 where the operand's dim is 1 or missing (ONNX multidirectional broadcasting).
std::vector<int64_t> broadcast_strides(const Shape& operand, const Shape& out);

// Calls fn(o, idx) for every multi-index of `shape` in row-major order (o: the linear index).
template <class Fn>
void for_each_index(const Shape& shape, Fn&& fn) {
  int64_t total = numel(shape);
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t o = 0; o < total; ++o) {
    fn(o, idx);
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      if (++idx[static_cast<size_t>(d)] < shape[static_cast<size_t>(d)]) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
}

// The implementations of model_ops_onnx.cpp (ONNX's data movement, gathers and generators) and
// model_ops_windows.cpp (convolution, pooling, LRN).
std::vector<std::pair<OpKind, ModelOpImpl>> onnx_model_op_impls();
std::vector<std::pair<OpKind, ModelOpImpl>> window_model_op_impls();

}  // namespace weft
