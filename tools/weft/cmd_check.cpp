// `weft check FILE [--target NAME]`: runs the validity checker and reports every violation.
#include <fmt/format.h>

#include <iostream>

#include "core/target.h"
#include "ir/validate.h"
#include "tools/weft/command.h"

namespace {

std::string plural(size_t n, const char* word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

std::string kib(int64_t bytes) {
  return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / 1024.0);
}

// "2 inputs, 1 output, 1 graph-defined kernel (grid 96x1x1, loop 16, 56.2 KiB shared memory on
// h100)".
std::string summary(const weft::Graph& g, const weft::Target& target) {
  size_t predefined = 0;
  std::vector<std::string> kernels;
  for (const weft::Op& op : g.ops) {
    if (op.kind != weft::OpKind::kernel || !op.body) {
      ++predefined;
      continue;
    }
    const weft::Graph& b = *op.body;
    kernels.push_back(fmt::format("grid {}x{}x{}, loop {}, {} shared memory on {}", b.grid[0],
                                  b.grid[1], b.grid[2], b.loop, kib(weft::block_smem_bytes(b)),
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

weft::cli::Register reg("check", "Check a µGraph file against the validity rules of a target",
                        [](CLI::App& sub) {
                          auto file = std::make_shared<std::string>();
                          auto target = std::make_shared<std::string>();
                          sub.add_option("FILE", *file, "µGraph file (.weft)")->required();
                          sub.add_option("--target", *target,
                                         "hardware target (see `weft targets`; default: " +
                                             weft::default_target().name + ")");
                          return [file, target]() -> int {
                            const weft::Target& t = target->empty() ? weft::default_target()
                                                                    : weft::target_by_name(*target);
                            weft::Graph g = weft::cli::load_graph(*file);
                            auto errors = weft::check_graph(g, t);
                            for (const weft::UserError& e : errors) {
                              // Every violation is located: one about the file as a whole
                              // (an empty program has no statement to point at) at its start.
                              weft::SourceLoc loc = e.loc();
                              if (loc.file.empty()) loc.file = *file;
                              if (!loc.known()) loc = weft::SourceLoc{loc.file, 1, 1};
                              std::cerr << weft::UserError(loc, e.message()).what() << "\n";
                            }
                            if (!errors.empty()) return 1;
                            std::cout << "ok: " << summary(g, t) << "\n";
                            return 0;
                          };
                        });

}  // namespace
