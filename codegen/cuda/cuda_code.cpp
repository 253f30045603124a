// Pieces of generated CUDA text shared by the emitters (codegen/cuda/cuda_code.h).
#include "codegen/cuda/cuda_code.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "core/error.h"

namespace weft::cuda_emit {

namespace {

constexpr CombineForm kCombineForms[] = {
    {OpKind::sum, "0.0f", "{0} + {1}"},
    {OpKind::mean, "0.0f", "{0} + {1}"},
    {OpKind::max, "-INFINITY", "fmaxf({0}, {1})"},
    {OpKind::accum_sum, "0.0f", "{0} + {1}"},
    {OpKind::accum_max, "-INFINITY", "fmaxf({0}, {1})"},
};

bool is_identifier(const std::string& e) {
  return std::all_of(e.begin(), e.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// Element offset of `o` at per-dim indices of a loop shape of the same rank (size-1 dims of `o`
// broadcast).
std::string offset(const Operand& o, const std::vector<std::string>& idx) {
  std::string e;
  for (size_t d = 0; d < o.shape.size(); ++d) {
    if (o.shape[d] == 1 || idx[d] == "0") continue;
    std::string v = o.wide ? fmt::format("static_cast<int64_t>({})", idx[d]) : paren(idx[d]);
    std::string term = o.strides[d] == 1 ? v : fmt::format("{} * {}", v, o.strides[d]);
    e += (e.empty() ? "" : " + ") + term;
  }
  // Not `e = "0"`: compiled apart from its callers, that assignment trips GCC 12's bogus
  // -Wrestrict on one-character literals (GCC bug 105329) under -O2 -Werror.
  if (e.empty()) e = std::string("0");
  if (o.swizzle_row_bytes > 0)
    e = fmt::format("weft_swz<{}, {}>({})", dtype_bytes(o.dtype), o.swizzle_row_bytes, e);
  return e;
}

}  // namespace

const char* ctype(DType d) {
  switch (d) {
    case DType::f32:
      return "float";
    case DType::f16:
      return "weft_f16";
    case DType::bf16:
      return "weft_bf16";
    // Model tensors a persistent kernel's device-kernel calls read (µGraphs never hold them).
    case DType::f64:
      return "double";
    case DType::i64:
      return "int64_t";
    case DType::i32:
      return "int32_t";
    case DType::i16:
      return "int16_t";
    case DType::i8:
      return "int8_t";
    case DType::u8:
    case DType::boolean:
      return "uint8_t";
  }
  return "?";
}

int gemm_code(DType d) {
  return d == DType::f16 ? 1 : d == DType::bf16 ? 2 : 0;
}

std::string flit(double v) {
  std::string s = fmt::format("{:.9g}", v);
  if (s.find_first_of(".e") == std::string::npos && s.find("inf") == std::string::npos) s += ".0";
  return s + "f";
}

const CombineForm& combine_form(OpKind op) {
  for (const CombineForm& f : kCombineForms)
    if (f.op == op) return f;
  WEFT_CHECK(false, "{} is not a reduction", op_info(op).name);
  return kCombineForms[0];
}

std::string combine(OpKind op, const std::string& acc, const std::string& v) {
  return fmt::format(fmt::runtime(combine_form(op).combine), acc, v);
}

std::string scalar_expr(const Step& s, const std::vector<std::string>& a) {
  const OpInfo& info = op_info(s.op);
  WEFT_CHECK(info.code.cuda != nullptr, "{} is not elementwise", info.name);
  const AttrSpec* c = rational_attr(info);
  return fmt::format(fmt::runtime(info.code.cuda), a.at(0), a.size() > 1 ? a[1] : "",
                     c ? flit(s.attrs.get_rational(c->name).to_double()) : "");
}

std::string paren(const std::string& e) {
  return is_identifier(e) ? e : "(" + e + ")";
}

std::string ref(const Operand& o, const std::vector<std::string>& idx) {
  return fmt::format("{}[{}]", o.ptr, offset(o, idx));
}

std::string load(const Operand& o, const std::vector<std::string>& idx) {
  return fmt::format("weft_ld(&{})", ref(o, idx));
}

}  // namespace weft::cuda_emit
