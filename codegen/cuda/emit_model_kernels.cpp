// The model executor's kernel library: the embedded kernels plus weft_dk_scalar, one case per
// operator with a CUDA scalar form, from the operator table.
#include "codegen/cuda/emit_model_kernels.h"

#include <fmt/format.h>

#include "core/embedded_files.h"
#include "ir/ops.h"

namespace weft {

namespace {

// The table's scalar forms as weft_dk_scalar.
std::string scalar_function() {
  std::string s;
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
}

}  // namespace

const std::string& model_kernels_source() {
  static const std::string text =
      expand_embedded("codegen/cuda/device/model_kernels.cuh") + scalar_function();
  return text;
}

const std::string& model_kernel_bodies_source() {
  static const std::string text = "#define WEFT_DK_BODIES_ONLY 1\n" +
                                  expand_embedded("codegen/cuda/device/model_kernels.cuh",
                                                  {"codegen/cuda/device/prelude.cuh"}) +
                                  scalar_function();
  return text;
}

}  // namespace weft
