// The ONNX operators the importer declares supported, with their opset ranges: read from the
// converter table (onnx/converters.cpp), so the list and the converters cannot disagree.
#pragma once

#include <string>
#include <vector>

namespace weft {

struct OnnxOperator {
  std::string op_type;
  int min_opset;
  int max_opset;
};

// Sorted by op_type; empty when weft was built without ONNX support.
std::vector<OnnxOperator> onnx_operators();

}  // namespace weft
