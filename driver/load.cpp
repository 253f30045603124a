// Loading µGraph files (the CLI commands, the Python binding): read the bytes, reject non-text,
// parse.
#include "driver/load.h"

#include <fstream>
#include <iterator>
#include <sstream>

#include "core/error.h"
#include "ir/parser.h"

namespace weft {
namespace {

constexpr std::streamoff kMaxFileBytes = std::streamoff{64} << 20;

// Offset of the first byte that breaks UTF-8 (or NUL), or npos when the text is valid.
size_t first_invalid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c == 0) return i;
    int extra = c < 0x80           ? 0
                : (c >> 5) == 0x6  ? 1
                : (c >> 4) == 0xE  ? 2
                : (c >> 3) == 0x1E ? 3
                                   : -1;
    if (extra < 0 || (extra == 1 && c < 0xC2) || (extra == 3 && c > 0xF4)) return i;
    if (extra > 0 && i + static_cast<size_t>(extra) >= s.size()) return i;
    for (int k = 1; k <= extra; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return i;
    i += static_cast<size_t>(extra) + 1;
  }
  return std::string_view::npos;
}

SourceLoc loc_of_offset(const std::string& path, std::string_view s, size_t offset) {
  SourceLoc loc{path, 1, 1};
  for (size_t i = 0; i < offset; ++i) {
    if (s[i] == '\n') {
      ++loc.line;
      loc.col = 1;
    } else {
      ++loc.col;
    }
  }
  return loc;
}

}  // namespace

Graph load_graph(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw UserError(SourceLoc{path}, "cannot open the file (does it exist and is it readable?)");
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  if (size < 0) throw UserError(SourceLoc{path}, "cannot read the file (is it a regular file?)");
  if (size > kMaxFileBytes)
    throw UserError(SourceLoc{path},
                    fmt::format("the file is {} bytes; µGraph files are limited to "
                                "64 MiB",
                                static_cast<long long>(size)));
  in.seekg(0, std::ios::beg);
  std::string text(static_cast<size_t>(size), '\0');
  if (size > 0 && !in.read(text.data(), size))
    throw UserError(SourceLoc{path}, "cannot read the file");
  if (size_t bad = first_invalid_utf8(text); bad != std::string_view::npos)
    throw UserError(loc_of_offset(path, text, bad),
                    fmt::format("the file is not UTF-8 text (byte 0x{:02X})",
                                static_cast<unsigned char>(text[bad])));
  return parse_graph(text, path);
}

}  // namespace weft
