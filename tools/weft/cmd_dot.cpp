// `weft dot FILE [-o out.svg|out.png|out.pdf|out.dot]`: draws a µGraph's hierarchy with Graphviz.
#include <iostream>

#include "driver/render_dot.h"
#include "ir/dot.h"
#include "tools/weft/command.h"

namespace {

weft::cli::Register reg("dot", "Draw a µGraph's hierarchy with Graphviz (DOT text, SVG, PNG, PDF)",
                        [](CLI::App& sub) {
                          auto file = std::make_shared<std::string>();
                          auto out = std::make_shared<std::string>();
                          sub.add_option("FILE", *file, "µGraph file (.weft)")->required();
                          sub.add_option("-o,--output", *out,
                                         "write here, format by extension (.svg .png .pdf .dot); "
                                         "default: DOT text on stdout");
                          return [file, out]() -> int {
                            std::string text = weft::to_dot(weft::load_graph(*file));
                            if (out->empty())
                              std::cout << text;
                            else
                              weft::render_dot(text, *out);
                            return 0;
                          };
                        });

}  // namespace
