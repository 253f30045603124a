// The model executor's kernel library: the embedded kernels plus weft_dk_scalar, a switch over
// the operators with a device scalar form.
#include "codegen/cuda/emit_model_kernels.h"

#include <fmt/format.h>

#include "core/embedded_files.h"

namespace weft {

const char* device_scalar_form(OpKind kind) {
  switch (kind) {
    WEFT_CASES_UNARY
    WEFT_CASES_BINARY
    // The table's pattern uses {0} {1} for operands and {2} for the attribute: shift the
    // attribute to {3} when emitting (model_kernels_source).
    return op_info(kind).code.cuda;
    case OpKind::where:
      return "({0} != 0.0f ? {1} : {2})";
    case OpKind::pow:
      return "powf({0}, {1})";
    case OpKind::abs:
      return "fabsf({0})";
    case OpKind::reciprocal:
      return "(1.0f / {0})";
    case OpKind::log:
      return "logf({0})";
    case OpKind::clip:  // NaN stays NaN, as std::clamp keeps it
      return "({0} != {0} ? {0} : fminf(fmaxf({0}, {3}), {4}))";
    case OpKind::cast:
      return "weft_dk_cast({0}, {3}, {4})";
    case OpKind::gelu_tanh:
      return "(0.5f * {0} * (1.0f + tanhf(0.79788456080286536f * ({0} + 0.044715f * {0} * {0} * "
             "{0}))))";
      WEFT_CASES_MATMUL
      WEFT_CASES_REDUCTION
      WEFT_CASES_MOVEMENT
      WEFT_CASES_COMPOSITE
      WEFT_CASES_STRUCTURE
      WEFT_CASES_HIERARCHY
    case OpKind::permute:
    case OpKind::embedding:
    case OpKind::rope:
    case OpKind::causal_mask:
    case OpKind::softmax_safe:
    case OpKind::slice:
    case OpKind::layer_norm:
    case OpKind::attention:
    case OpKind::conv:
    case OpKind::max_pool:
    case OpKind::avg_pool:
    case OpKind::max_pool_indices:
    case OpKind::global_avg_pool:
    case OpKind::global_max_pool:
    case OpKind::lrn:
    case OpKind::gather:
    case OpKind::slice_steps:
    case OpKind::expand:
    case OpKind::fill:
    case OpKind::dims_tensor:
    case OpKind::range:
    case OpKind::tile:
    case OpKind::pad:
      return nullptr;
  }
  return nullptr;
}

namespace {
bool is_table_elementwise(OpKind kind) {
  OpClass c = class_of(kind);
  return c == OpClass::unary || c == OpClass::binary;
}
}  // namespace

const std::string& model_kernels_source() {
  static const std::string text = [] {
    std::string s = expand_embedded("codegen/cuda/device/model_kernels.cuh");
    s += "\n// The operators' scalar forms (generated from the operator table).\n";
    s += "WEFT_DEV float weft_dk_scalar(int op, float a, float b, float c, float k, float k2) {\n";
    s += "  (void)a; (void)b; (void)c; (void)k; (void)k2;\n  switch (op) {\n";
    for (int i = 0; i < kNumOpKinds; ++i) {
      auto kind = static_cast<OpKind>(i);
      const char* form = device_scalar_form(kind);
      if (!form) continue;
      // Table rows put their attribute at {2}; the model forms use {2} for a third operand and
      // {3} {4} for their constants.
      std::string expr = is_table_elementwise(kind)
                             ? fmt::format(fmt::runtime(form), "a", "b", "k")
                             : fmt::format(fmt::runtime(form), "a", "b", "c", "k", "k2");
      s += fmt::format("    case {}: return {};  // {}\n", i, expr, op_info(kind).name);
    }
    s += "  }\n  return NAN;\n}\n";
    return s;
  }();
  return text;
}

}  // namespace weft
