// The ONNX converter table: one row per op_type and opset range, each turning a node into
// folded constants, symbolic shape arithmetic or IR bindings (docs/onnx.md lists the rows). Each
// converter file contributes the rows of its operators (onnx/convert_*.cpp).
#ifdef WEFT_HAVE_ONNX
#include "onnx/convert_common.h"

namespace weft::onnx_import {

const std::vector<Converter>& converters() {
  static const std::vector<Converter> table = [] {
    std::vector<Converter> rows;
    add_math_converters(rows);
    add_shape_converters(rows);
    add_conv_converters(rows);
    add_logic_converters(rows);
    add_triangle_converters(rows);
    add_einsum_converters(rows);
    return rows;
  }();
  return table;
}

}  // namespace weft::onnx_import
#endif
