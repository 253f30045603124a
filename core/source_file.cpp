// Reading source files: the size limit, the UTF-8 check, located errors.
#include "core/source_file.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

#include "core/error.h"

namespace weft {
namespace {
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

// Opens `path` for binary reading, refusing a missing path and a directory by name first.
std::ifstream open_file(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (status.type() == std::filesystem::file_type::not_found)
    throw UserError(SourceLoc{path}, "cannot open the file: it does not exist");
  if (status.type() == std::filesystem::file_type::directory)
    throw UserError(SourceLoc{path}, "is a directory, not a file (give the file inside it)");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw UserError(SourceLoc{path}, "cannot open the file (does it exist and is it readable?)");
  return in;
}

}  // namespace

std::string read_binary_file(const std::string& path) {
  std::ifstream in = open_file(path);
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) throw UserError(SourceLoc{path}, "cannot read the file");
  return s.str();
}

std::string read_source_file(const std::string& path) {
  std::ifstream in = open_file(path);
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  if (size < 0) throw UserError(SourceLoc{path}, "cannot read the file (is it a regular file?)");
  if (size > kMaxSourceFileBytes)
    throw UserError(SourceLoc{path},
                    fmt::format("the file is {} bytes; source files are limited to 64 MiB",
                                static_cast<long long>(size)));
  in.seekg(0, std::ios::beg);
  std::string text(static_cast<size_t>(size), '\0');
  if (size > 0 && !in.read(text.data(), size))
    throw UserError(SourceLoc{path}, "cannot read the file");
  if (size_t bad = first_invalid_utf8(text); bad != std::string_view::npos)
    throw UserError(loc_of_offset(path, text, bad),
                    fmt::format("the file is not UTF-8 text (byte 0x{:02X})",
                                static_cast<unsigned char>(text[bad])));
  return text;
}

}  // namespace weft
