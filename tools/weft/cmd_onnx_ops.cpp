// `weft onnx-ops`: the ONNX operators the importer supports, one a line with its opset range
// (`OpType MIN MAX`); scripts/onnx_node_tests.py reads it to choose the node tests to run.
#include <fmt/format.h>

#include <iostream>

#include "core/error.h"
#include "onnx/import.h"
#include "onnx/operators.h"
#include "tools/weft/command.h"

namespace {

weft::cli::Register reg(
    "onnx-ops", "List the ONNX operators weft imports, with opset ranges", [](CLI::App&) {
      return []() -> int {
        if (!weft::onnx_supported())
          throw weft::UserError("weft was built without ONNX support (docs/onnx.md)");
        for (const weft::OnnxOperator& op : weft::onnx_operators())
          std::cout << fmt::format("{} {} {}\n", op.op_type, op.min_opset, op.max_opset);
        return 0;
      };
    });

}  // namespace
