// Looking up and inlining embedded files.
#include "core/embedded_files.h"

#include <set>
#include <sstream>

#include "core/error.h"

namespace weft {

std::string_view embedded_file(std::string_view path) {
  for (const EmbeddedFile& f : embedded_files())
    if (f.path == path) return f.text;
  WEFT_CHECK(false, "{} is not an embedded file (see cmake/embed_files.cmake)", path);
  return {};
}

namespace {

void expand_into(std::string_view path, std::set<std::string_view>& done, std::string& out) {
  std::string_view text = embedded_file(path);
  done.insert(path);
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    if (line == "#pragma once") continue;
    const std::string_view prefix = "#include \"";
    if (line.starts_with(prefix) && line.ends_with("\"")) {
      std::string_view included =
          std::string_view(line).substr(prefix.size(), line.size() - prefix.size() - 1);
      for (const EmbeddedFile& f : embedded_files())
        if (f.path == included) {
          if (!done.count(f.path)) {
            out += "// " + std::string(f.path) + "\n";
            expand_into(f.path, done, out);
          }
          line.clear();
          break;
        }
      if (line.empty()) continue;
    }
    out += line;
    out += '\n';
  }
}

}  // namespace

std::string expand_embedded(std::string_view path, const std::vector<std::string_view>& pasted) {
  std::set<std::string_view> done(pasted.begin(), pasted.end());
  std::string out = "// " + std::string(path) + "\n";
  expand_into(path, done, out);
  return out;
}

}  // namespace weft
