// onnx_operators(): the converter table as data, for `weft onnx-ops` and the node-test harness.
#include "onnx/operators.h"

#include <algorithm>

#ifdef WEFT_HAVE_ONNX
#include "onnx/importer.h"
#endif

namespace weft {

std::vector<OnnxOperator> onnx_operators() {
  std::vector<OnnxOperator> out;
#ifdef WEFT_HAVE_ONNX
  for (const onnx_import::Converter& c : onnx_import::converters())
    out.push_back({c.op_type, c.min_opset, c.max_opset});
  std::sort(out.begin(), out.end(),
            [](const OnnxOperator& a, const OnnxOperator& b) { return a.op_type < b.op_type; });
#endif
  return out;
}

}  // namespace weft
