// libFuzzer target of the parser: any input either parses (and then round-trips through the
// printer) or throws UserError; anything else is a bug and aborts.
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "ir/parser.h"
#include "ir/printer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  weft::Graph g;
  try {
    g = weft::parse_graph(text, "fuzz.weft");
  } catch (const weft::UserError&) {
    return 0;
  }
  std::string printed = weft::print_graph(g);
  try {
    weft::Graph back = weft::parse_graph(printed, "printed.weft");
    if (!(back == g)) {
      std::fprintf(stderr, "round-trip mismatch; printed form:\n%s\n", printed.c_str());
      std::abort();
    }
  } catch (const weft::UserError& e) {
    std::fprintf(stderr, "printed form does not parse: %s\n%s\n", e.what(), printed.c_str());
    std::abort();
  }
  return 0;
}
