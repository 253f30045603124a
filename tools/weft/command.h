// Subcommand registry of the weft CLI: each cmd_*.cpp registers one command at static-init time.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "driver/load.h"
#include "ir/graph.h"

namespace weft::cli {

// Sets up `sub` (options, flags) and returns the action to run when it is chosen.
// The action returns the process exit code (0 ok, 1 user error, 3.. command-specific).
using CommandSetup = std::function<std::function<int()>(CLI::App& sub)>;

struct Command {
  std::string name;
  std::string help;
  CommandSetup setup;
};

std::vector<Command>& registry();

struct Register {
  Register(std::string name, std::string help, CommandSetup setup) {
    registry().push_back(Command{std::move(name), std::move(help), std::move(setup)});
  }
};

}  // namespace weft::cli
