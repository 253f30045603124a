// The --threads flag: oneTBB's parallelism and the CPU library's threads capped together.
#include "tools/weft/thread_flags.h"

#include "core/parallel.h"
#include "cpulib/cpu_library.h"

namespace weft::cli {

void add_threads_option(CLI::App& app, int& threads) {
  app.add_option("--threads", threads,
                 "the most threads weft's CPU kernels and the CPU library use (0: the cores)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
}

ThreadCap::ThreadCap(int threads)
    : threads_(threads > 0 ? threads : hardware_threads()),
      cap_(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(threads_)) {
  limit_cpu_library_threads(threads_);
}

}  // namespace weft::cli
