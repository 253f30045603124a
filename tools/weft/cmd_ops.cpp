// `weft ops`: the operator table (operands, levels, model-level ones included, fragment, fusion
// pattern, attributes with defaults, meaning).
#include <fmt/format.h>

#include <iostream>
#include <variant>

#include "ir/ops.h"
#include "tools/weft/command.h"

namespace {

std::string default_text(const weft::AttrSpec& a) {
  const weft::AttrValue& v = a.default_value;
  if (const auto* i = std::get_if<int64_t>(&v))
    return a.kind == weft::AttrKind::opt_dim && *i < 0 ? "-" : std::to_string(*i);
  if (const auto* r = std::get_if<weft::Rational>(&v)) return r->str();
  std::string s = "[";
  const auto& list = std::get<std::vector<int64_t>>(v);
  for (size_t i = 0; i < list.size(); ++i)
    s += (i ? ", " : "") + (a.kind == weft::AttrKind::dim_map && list[i] < 0
                                ? std::string("-")
                                : std::to_string(list[i]));
  return s + "]";
}

std::string attrs_text(const weft::OpInfo& op) {
  std::string s;
  for (const weft::AttrSpec& a : op.attrs)
    s += (s.empty() ? "" : ", ") +
         (a.required ? std::string(a.name) : fmt::format("{}={}", a.name, default_text(a)));
  return s.empty() ? "-" : s;
}

std::string operands_text(const weft::OpInfo& op) {
  if (op.max_inputs < 0) return fmt::format("{}+", op.min_inputs);
  if (op.min_inputs == op.max_inputs) return std::to_string(op.min_inputs);
  return fmt::format("{}-{}", op.min_inputs, op.max_inputs);
}

std::string level_letters(uint8_t levels) {
  std::string s;
  if (levels & weft::kAtKernel) s += "K";
  if (levels & weft::kAtBlock) s += "B";
  if (levels & weft::kAtThread) s += "T";
  if (levels & weft::kAtModel) s += "M";
  return s;
}

const char* fragment_text(const weft::OpInfo& op) {
  if (weft::is_model_only(op.kind)) return "-";
  return op.lax ? "lax" : "uninterpreted";
}

weft::cli::Register reg("ops", "List the operator table", [](CLI::App&) {
  return []() -> int {
    std::cout << "Levels: K kernel graph, B block graph, T thread graph, M model function "
                 "(.wmod); an operator with M\nalone is model-level only, never in a µGraph. "
                 "Fragment: 'lax' operators are in the Lax fragment the\nequivalence verifier "
                 "models exactly; 'uninterpreted' ones are opaque functions to it ('-': never "
                 "verified).\nFusion: how a result element depends on operand elements, for "
                 "fusing operators. Attributes without\n'=' are required; the others show their "
                 "default.\n\n";
    std::cout << fmt::format("{:<16} {:<8} {:<6} {:<14} {:<24} {:<24} {}\n", "operator", "operands",
                             "levels", "fragment", "fusion", "attributes", "meaning");
    for (const weft::OpInfo& op : weft::all_ops())
      std::cout << fmt::format("{:<16} {:<8} {:<6} {:<14} {:<24} {:<24} {}\n", op.name,
                               operands_text(op), level_letters(op.levels), fragment_text(op),
                               fusion_pattern_name(op.fusion), attrs_text(op), op.doc);
    return 0;
  };
});

}  // namespace
