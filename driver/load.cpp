// Loading µGraph files (the CLI commands, the Python binding): read the text
// (core/source_file: size limit, UTF-8 check), parse.
#include "driver/load.h"

#include "core/source_file.h"
#include "ir/parser.h"

namespace weft {

Graph load_graph(const std::string& path) {
  return parse_graph(read_source_file(path), path);
}

}  // namespace weft
