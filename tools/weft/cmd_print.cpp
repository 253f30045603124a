// `weft print FILE [--no-types]`: the canonical text form of a µGraph.
#include <iostream>

#include "ir/printer.h"
#include "tools/weft/command.h"

static weft::cli::Register reg("print", "Print a µGraph file in canonical form", [](CLI::App& sub) {
  auto file = std::make_shared<std::string>();
  auto no_types = std::make_shared<bool>(false);
  sub.add_option("FILE", *file, "µGraph file")->required();
  sub.add_flag("--no-types", *no_types, "Omit the trailing type comments");
  return [=]() -> int {
    weft::Graph g = weft::load_graph(*file);
    std::cout << weft::print_graph(g, !*no_types);
    return 0;
  };
});
