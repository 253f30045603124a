// The model executor's kernel library: the embedded kernels plus weft_dk_scalar, one case per
// operator with a CUDA scalar form, from the operator table.
#include "codegen/cuda/emit_model_kernels.h"

#include <fmt/format.h>

#include "core/embedded_files.h"
#include "ir/ops.h"

namespace weft {

const std::string& model_kernels_source() {
  static const std::string text = [] {
    std::string s = expand_embedded("codegen/cuda/device/model_kernels.cuh");
    s += "\n// The operators' scalar forms (generated from the operator table).\n";
    s += "WEFT_DEV float weft_dk_scalar(int op, float a, float b, float c, float k, float k2) {\n";
    s += "  (void)a; (void)b; (void)c; (void)k; (void)k2;\n  switch (op) {\n";
    for (const OpInfo& info : all_ops()) {
      if (!has_scalar_forms(info)) continue;
      // ScalarCode's placeholders: {0} {1} {4} the operands, {2} {3} the constants.
      std::string expr = fmt::format(fmt::runtime(info.code.cuda), "a", "b", "k", "k2", "c");
      s += fmt::format("    case {}: return {};  // {}\n", static_cast<int>(info.kind), expr,
                       info.name);
    }
    s += "  }\n  return NAN;\n}\n";
    return s;
  }();
  return text;
}

}  // namespace weft
