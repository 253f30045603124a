// Graphviz rendering through the `dot` program on PATH (a pipe to its standard input).
#include "driver/render_dot.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace weft {
namespace {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::string find_dot() {
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "";
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    std::filesystem::path cand = std::filesystem::path(p.substr(start, end - start)) / "dot";
    std::error_code ec;
    if (end > start && std::filesystem::is_regular_file(cand, ec)) return cand.string();
    start = end + 1;
  }
  return {};
}

void render_dot(const std::string& text, const std::string& out) {
  std::string ext = std::filesystem::path(out).extension().string();
  if (ext == ".dot" || ext == ".gv") {
    std::ofstream f(out, std::ios::binary);
    f << text;
    if (!f) throw UserError(SourceLoc{out}, "cannot write this file");
    return;
  }
  if (ext != ".svg" && ext != ".png" && ext != ".pdf")
    throw UserError(SourceLoc{out},
                    "unknown output format '" + ext + "'; use .svg, .png, .pdf or .dot");
  std::string dot = find_dot();
  if (dot.empty())
    throw UserError(
        "the Graphviz 'dot' program is not on PATH; install graphviz, or write "
        "the DOT text with -o FILE.dot or without -o");
  std::string cmd = shell_quote(dot) + " -T" + ext.substr(1) + " -o " + shell_quote(out);
  FILE* pipe = popen(cmd.c_str(), "w");
  if (!pipe) throw UserError("cannot run " + dot);
  size_t written = std::fwrite(text.data(), 1, text.size(), pipe);
  int rc = pclose(pipe);
  if (written != text.size() || rc != 0)
    throw UserError(SourceLoc{out}, "Graphviz 'dot' failed to write this file");
}

}  // namespace weft
