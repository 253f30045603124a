// The --threads flag of the commands that run compiled code on the CPU (`weft run`, `weft bench`,
// `weft model run`): one cap for weft's CPU kernels (oneTBB) and the CPU library (oneDNN).
#pragma once

#include <tbb/global_control.h>
#include <CLI/CLI.hpp>

namespace weft::cli {

// Adds `--threads N` (0: the cores) to `app`, stored in `threads`.
void add_threads_option(CLI::App& app, int& threads);

// While alive, weft's CPU kernels and the CPU library use at most `threads` threads (0: the
// cores).
class ThreadCap {
 public:
  explicit ThreadCap(int threads);
  int threads() const { return threads_; }

 private:
  int threads_;
  tbb::global_control cap_;
};

}  // namespace weft::cli
