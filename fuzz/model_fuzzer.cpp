// libFuzzer target of the .wmod parser and checker: any input either parses, deduces and then
// round-trips through the printer, passes check_module and expands its composites into a module
// that passes it too, or throws UserError; anything else is a bug and aborts. Inputs naming a
// µGraph file ('"') are skipped: reading files is not the parser's logic and not deterministic.
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "model/deduce.h"
#include "model/expand.h"
#include "model/parser.h"
#include "model/printer.h"

namespace {
[[noreturn]] void bug(const char* what, const std::string& detail) {
  std::fprintf(stderr, "%s\n%s\n", what, detail.c_str());
  std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (text.find('"') != std::string_view::npos) return 0;
  weft::SymProver prover;
  weft::Module m;
  try {
    m = weft::parse_module(text, "fuzz.wmod", prover);
  } catch (const weft::UserError&) {
    return 0;
  }
  std::string printed = weft::print_module(m);
  try {
    weft::Module back = weft::parse_module(printed, "printed.wmod", prover);
    if (!(back == m)) bug("round-trip mismatch; printed form:", printed);
    weft::check_module(m, prover);
    weft::check_module(weft::expand_composites(m, prover), prover);
  } catch (const weft::UserError& e) {
    bug("a parsed module fails again after printing, checking or expanding:",
        std::string(e.what()) + "\n" + printed);
  }
  return 0;
}
