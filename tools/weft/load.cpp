// Loading µGraph files for the CLI commands: read the bytes (core/source_file), parse.
#include "core/source_file.h"
#include "ir/parser.h"
#include "tools/weft/command.h"

namespace weft::cli {

Graph load_graph(const std::string& path) {
  return parse_graph(read_source_file(path), path);
}

}  // namespace weft::cli
