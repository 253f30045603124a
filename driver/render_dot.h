// Drawing a µGraph's DOT text (ir/dot.h) with Graphviz: the CLI's `weft dot -o` and the Python
// binding's SVG pictures.
#pragma once

#include <string>

namespace weft {

// The `dot` executable on PATH, or empty.
std::string find_dot();

// Writes `dot_text` to `out`, its format chosen by the extension: .dot/.gv (the text itself), or
// .svg/.png/.pdf (drawn by Graphviz). UserError for an unknown extension, a missing `dot`, or a
// file that cannot be written.
void render_dot(const std::string& dot_text, const std::string& out);

}  // namespace weft
