// Parsing the model commands' --bind and --bound flags.
#include "tools/weft/model_flags.h"

#include <fmt/format.h>

#include <charconv>
#include <iostream>

namespace weft::cli {

std::string bound_help() {
  return fmt::format(
      "ONNX models: upper bound of the variable of a dim_param, NAME=N (repeatable; default {}, "
      "or less where the model allows less; `model run`: the inputs' dims)",
      OnnxImportOptions{}.default_bound);
}

void print_notes(const std::vector<std::string>& notes) {
  for (const std::string& n : notes) std::cerr << "note: " << n << "\n";
}

SymBinding parse_binding(const std::string& text, const Module& m) {
  SymBinding out;
  if (text.empty()) return out;  // the empty binding: a model without symbolic dims
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t eq = item.find('=');
    std::string name = eq == std::string::npos ? item : item.substr(0, eq);
    const SymVar* var = m.syms.find(name);
    if (eq == std::string::npos || !var)
      throw UserError(fmt::format("--bind: '{}' is not NAME=VALUE for a declared variable", item));
    int64_t value = 0;
    std::string digits = item.substr(eq + 1);
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc() || ptr != digits.data() + digits.size() || value < var->lo() ||
        (var->hi() && value > *var->hi()))
      throw UserError(fmt::format("--bind: {} = '{}' is not an integer within {}", name, digits,
                                  var->decl_str()));
    out[name] = value;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

void parse_bound(const std::string& text, OnnxImportOptions& options) {
  size_t eq = text.find('=');
  int64_t value = 0;
  std::string digits = eq == std::string::npos ? "" : text.substr(eq + 1);
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (eq == std::string::npos || eq == 0 || ec != std::errc() ||
      ptr != digits.data() + digits.size() || value < 1)
    throw UserError(fmt::format("--bound: '{}' is not NAME=N with N >= 1", text));
  options.bounds[text.substr(0, eq)] = value;
}

}  // namespace weft::cli
