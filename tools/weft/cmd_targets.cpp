// `weft targets`: the built-in hardware targets and the limits and rates the compiler uses.
#include <fmt/format.h>

#include <iostream>

#include "core/target.h"
#include "tools/weft/command.h"

namespace {

weft::cli::Register reg("targets", "List the hardware targets", [](CLI::App&) {
  return []() -> int {
    std::cout << fmt::format(
        "{:<6} {:<4} {:<7} {:>5} {:>11} {:>8} {:>7} {:>6} {:>10} {:>10} "
        "{:>10} {:>9}  {}\n",
        "name", "kind", "arch", "SMs", "smem/block", "L2", "threads", "warp", "DRAM", "f16 tensor",
        "f32", "launch", "description");
    for (const weft::Target& t : weft::all_targets()) {
      std::string tensor =
          t.tensor_flops_f16 > 0 ? fmt::format("{:.0f} TF/s", t.tensor_flops_f16 / 1e12) : "-";
      std::cout << fmt::format(
          "{:<6} {:<4} {:<7} {:>5} {:>7} KiB {:>4} MiB {:>7} {:>6} {:>5.2f} TB/s {:>10} {:>5.1f} "
          "TF/s {:>6.1f} us  {}\n",
          t.name, t.kind == weft::TargetKind::gpu ? "gpu" : "cpu", t.arch, t.sm_count,
          t.smem_per_block_bytes / 1024, t.l2_bytes >> 20, t.max_threads_per_block, t.warp_size,
          t.dram_bytes_per_s / 1e12, tensor, t.cuda_flops_f32 / 1e12, t.launch_overhead_s * 1e6,
          t.description);
    }
    std::cout << "\nSMs are cores on the cpu target; its smem/block is the per-task working set "
                 "kept in L2.\nThe default target is "
              << weft::default_target().name << ".\n";
    return 0;
  };
});

}  // namespace
