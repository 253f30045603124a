// Entry point of the weft CLI: dispatches to registered subcommands and maps errors to exit codes
// (0 ok, 1 user error, 2 internal error).
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>

#include "core/error.h"
#include "tools/weft/command.h"

namespace weft::cli {
std::vector<Command>& registry() {
  static std::vector<Command> commands;
  return commands;
}
}  // namespace weft::cli

int main(int argc, char** argv) {
  using namespace weft;
  CLI::App app{"weft: a multi-level superoptimizer for tensor programs"};
  app.set_version_flag("--version", std::string("weft ") + WEFT_VERSION);
  app.require_subcommand(1);
  auto& commands = cli::registry();
  std::sort(commands.begin(), commands.end(),
            [](const cli::Command& a, const cli::Command& b) { return a.name < b.name; });
  std::function<int()> action;
  for (auto& c : commands) {
    CLI::App* sub = app.add_subcommand(c.name, c.help);
    auto run = c.setup(*sub);
    sub->callback([&action, run] { action = run; });
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);  // prints help/version/usage errors
    return code == 0 ? 0 : 1;
  }
  // Arguments checked, nothing run: how scripts/gpu-check.sh's dry run checks its commands.
  if (const char* parse_only = std::getenv("WEFT_PARSE_ONLY"); parse_only && *parse_only == '1')
    return 0;
  try {
    return action ? action() : 0;
  } catch (const UserError& e) {
    std::cerr << e.what() << "\n";
    return 1;
  } catch (const InternalError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "internal error (a bug in weft, please report it): " << e.what() << "\n";
    return 2;
  }
}
