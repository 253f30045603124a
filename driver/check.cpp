// The checker's violations, located, and the summary of a valid program.
#include "driver/check.h"

#include <fmt/format.h>

#include "ir/validate.h"

namespace weft {
namespace {

std::string plural(size_t n, const char* word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

std::string kib(int64_t bytes) {
  return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / 1024.0);
}

std::string summary(const Graph& g, const Target& target) {
  size_t predefined = 0;
  std::vector<std::string> kernels;
  for (const Op& op : g.ops) {
    if (op.kind != OpKind::kernel || !op.body) {
      ++predefined;
      continue;
    }
    const Graph& b = *op.body;
    kernels.push_back(fmt::format("grid {}x{}x{}, loop {}, {} shared memory on {}", b.grid[0],
                                  b.grid[1], b.grid[2], b.loop, kib(block_smem_bytes(b)),
                                  target.name));
  }
  std::string s =
      fmt::format("{}, {}", plural(g.inputs.size(), "input"), plural(g.outputs.size(), "output"));
  if (predefined > 0) s += ", " + plural(predefined, "pre-defined operator");
  if (!kernels.empty()) {
    s += ", " + plural(kernels.size(), "graph-defined kernel") + " (";
    for (size_t i = 0; i < kernels.size(); ++i) s += (i ? "; " : "") + kernels[i];
    s += ")";
  }
  return s;
}

}  // namespace

CheckReport check_program(const Graph& g, const Target& target, const std::string& file) {
  CheckReport report;
  for (const UserError& e : check_graph(g, target)) {
    SourceLoc loc = e.loc();
    if (loc.file.empty()) loc.file = file;
    if (!loc.known()) loc = SourceLoc{loc.file, 1, 1};
    report.violations.emplace_back(loc, e.message());
  }
  if (report.violations.empty()) report.summary = summary(g, target);
  return report;
}

}  // namespace weft
