// `weft check FILE [--target NAME]`: runs the validity checker and reports every violation.
#include <iostream>

#include "core/target.h"
#include "driver/check.h"
#include "tools/weft/command.h"

namespace {

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
                            weft::CheckReport report =
                                weft::check_program(weft::load_graph(*file), t, *file);
                            for (const weft::UserError& e : report.violations)
                              std::cerr << e.what() << "\n";
                            if (!report.violations.empty()) return 1;
                            std::cout << "ok: " << report.summary << "\n";
                            return 0;
                          };
                        });

}  // namespace
