// The `weft mpk` subcommands (cmd_mpk.cpp registers the command): the flags every subcommand
// reading a program shares, the summary and timing lines they print, and each subcommand's setup,
// which returns its action. The work is the driver's (driver/mpk_*.h).
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "driver/mpk_program.h"
#include "runtime/timing.h"

namespace weft::cli {

struct MpkArgs {
  std::string file;
  int workers = 4;
  std::string dispatch = "hybrid";
  std::vector<std::string> data_dependent;
  std::string data_dependent_reads;
};

// FILE, --workers, --dispatch, --data-dependent, --data-dependent-reads.
void add_mpk_flags(CLI::App* sub, MpkArgs& a);

// FILE loaded and prepared for `platform` with the flags' options (and `more`'s other fields).
MpkProgram prepare_mpk_file(const MpkArgs& a, MpkProgramOptions more);

// "NAME: N operators, N tasks ...": the task graph's summary lines.
void print_mpk_summary(const std::string& name, const MpkCompiled& c);
std::string timing_text(const Timing& t);
void write_file(const std::string& path, const std::string& bytes);

// A subcommand of `mpk` and what runs when it is chosen (the process exit code).
struct MpkSubcommand {
  CLI::App* app = nullptr;
  std::function<int()> action;
};
MpkSubcommand add_mpk_compile(CLI::App& mpk);  // mpk_compile.cpp: compile, unit
MpkSubcommand add_mpk_unit(CLI::App& mpk);
MpkSubcommand add_mpk_run(CLI::App& mpk);    // mpk_run.cpp
MpkSubcommand add_mpk_bench(CLI::App& mpk);  // mpk_bench.cpp: bench, hop
MpkSubcommand add_mpk_hop(CLI::App& mpk);
MpkSubcommand add_mpk_decoder(CLI::App& mpk);  // mpk_decoder.cpp

}  // namespace weft::cli
