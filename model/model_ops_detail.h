// Helpers the model-only operators' implementation files (model_ops_onnx.cpp and
// model_ops_windows.cpp) share; internal to those files, no other file includes it.
#pragma once

#include <utility>
#include <variant>
#include <vector>

#include "model/model_ops.h"

namespace weft::model_ops_detail {

using In = std::vector<const Tensor<double>*>;

inline const std::vector<SymExpr>& sym_list(const MAttrs& attrs, const char* name) {
  return std::get<std::vector<SymExpr>>(attrs.at(name));
}
inline const SymExpr& sym_int(const MAttrs& attrs, const char* name) {
  return std::get<SymExpr>(attrs.at(name));
}

// The rows model_ops_windows.cpp contributes to onnx_model_op_impls(): convolution, the pools
// and LRN, kept apart so the table's file stays under the size limit.
std::vector<std::pair<OpKind, ModelOpImpl>> window_model_op_impls();

}  // namespace weft::model_ops_detail
