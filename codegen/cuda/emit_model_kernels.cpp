// The model executor's kernel library: the embedded kernels plus weft_dk_scalar, one case per
// operator with a CUDA scalar form, from the operator table.
#include "codegen/cuda/emit_model_kernels.h"

#include <fmt/format.h>

#include <cctype>

#include "core/embedded_files.h"
#include "ir/ops.h"

namespace weft {

namespace {

// A scalar form in double: fmaxf/fminf/fabsf as fmax/fmin/fabs and float literals (1.0f) as
// doubles, so no call mixes the two (nvcc would pick a host-only overload).
std::string in_double(std::string expr) {
  for (const char* f : {"fmaxf(", "fminf(", "fabsf("})
    for (size_t at = expr.find(f); at != std::string::npos; at = expr.find(f, at))
      expr.erase(at + 4, 1);  // "fmaxf(" -> "fmax("
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::string out;
  for (size_t i = 0; i < expr.size(); ++i) {
    // An 'f' ending a numeric literal: digits and '.' (or an exponent) before it, a literal's
    // start (no identifier character) before those.
    if (expr[i] == 'f' && i > 0 && (i + 1 == expr.size() || !ident(expr[i + 1]))) {
      size_t j = i;
      while (j > 0 &&
             (std::isdigit(static_cast<unsigned char>(expr[j - 1])) || expr[j - 1] == '.' ||
              expr[j - 1] == 'e' || expr[j - 1] == '+' || expr[j - 1] == '-'))
        --j;
      while (j < i && (expr[j] == '+' || expr[j] == '-')) ++j;  // a sign before the literal
      const bool literal = j < i && std::isdigit(static_cast<unsigned char>(expr[j])) &&
                           (j == 0 || !ident(expr[j - 1]));
      if (literal) continue;
    }
    out += expr[i];
  }
  return out;
}

// The table's scalar forms as weft_dk_scalar (float) and weft_dk_scalar_x (double: the float
// forms of max, min and abs become the double ones, so integers stay exact).
std::string scalar_function(bool exact) {
  const char* t = exact ? "double" : "float";
  std::string s;
  s += "\n// The operators' scalar forms (generated from the operator table).\n";
  s +=
      fmt::format("WEFT_DEV {0} weft_dk_scalar{1}(int op, {0} a, {0} b, {0} c, {0} k, {0} k2) {{\n",
                  t, exact ? "_x" : "");
  s += "  (void)a; (void)b; (void)c; (void)k; (void)k2;\n  switch (op) {\n";
  for (const OpInfo& info : all_ops()) {
    if (!has_scalar_forms(info)) continue;
    // ScalarCode's placeholders: {0} {1} {4} the operands, {2} {3} the constants.
    std::string expr = fmt::format(fmt::runtime(info.code.cuda), "a", "b", "k", "k2", "c");
    if (exact) expr = in_double(expr);
    s += fmt::format("    case {}: return {};  // {}\n", static_cast<int>(info.kind), expr,
                     info.name);
  }
  s += "  }\n  return NAN;\n}\n";
  return s;
}

std::string scalar_functions() {
  return scalar_function(false) + scalar_function(true);
}

}  // namespace

const std::string& model_kernels_source() {
  static const std::string text =
      expand_embedded("codegen/cuda/device/model_kernels.cuh") + scalar_functions();
  return text;
}

const std::string& model_kernel_bodies_source() {
  static const std::string text = "#define WEFT_DK_BODIES_ONLY 1\n" +
                                  expand_embedded("codegen/cuda/device/model_kernels.cuh",
                                                  {"codegen/cuda/device/prelude.cuh"}) +
                                  scalar_functions();
  return text;
}

}  // namespace weft
