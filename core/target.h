// Hardware targets as data: every limit and rate the IR checker, search and cost model use.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace weft {

enum class TargetKind : uint8_t { gpu, cpu };

struct Target {
  std::string name;         // "h100", "cpu", ...
  std::string description;  // "NVIDIA H100 SXM (sm_90a)"
  TargetKind kind = TargetKind::gpu;
  std::string arch;  // "sm_90a" for GPUs, "native" for the CPU

  int sm_count = 0;  // SMs (GPU) or cores (CPU)
  int64_t smem_per_block_bytes =
      0;  // largest opt-in shared memory for one block (CPU: L2 tile budget)
  int64_t smem_per_sm_bytes = 0;
  int64_t l2_bytes = 0;
  int max_threads_per_block = 1024;
  int64_t max_grid[3] = {2147483647, 65535, 65535};
  int64_t max_blocks_total = 2147483647LL * 65535;  // product of grid dims
  int warp_size = 32;

  double dram_bytes_per_s = 0;  // sustained device-memory bandwidth
  double smem_bytes_per_s_per_sm = 0;
  double tensor_flops_f16 = 0;   // dense f16/bf16 with f32 accumulation, whole chip
  double cuda_flops_f32 = 0;     // non-tensor f32 FMA throughput x2, whole chip
  double launch_overhead_s = 0;  // per kernel launch

  // Cost-model figures (cost/, docs/cost-model.md gives each source).
  double l2_bytes_per_s = 0;        // sustained L2-to-SM bandwidth, whole chip
  double sm_load_bytes_per_s = 0;   // what one SM can pull from L2 (its share of the fabric)
  double dram_latency_s = 0;        // loaded latency of a device-memory load
  int max_threads_per_sm = 2048;    // resident threads per SM (occupancy)
  int max_blocks_per_sm = 32;       // resident blocks per SM (occupancy)
  double block_mma_fraction = 1.0;  // of tensor_flops_f16 reached by block-level mma.sync code
};

// All built-in targets, in a fixed order.
const std::vector<Target>& all_targets();
// Looks a target up by name (case-insensitive); throws UserError listing the known names.
const Target& target_by_name(std::string_view name);
// The target a program is checked, searched and costed for when none is given (weft optimize,
// check, cost; the CUDA emulation's; weft.optimize).
inline constexpr std::string_view kDefaultTargetName = "h100";
const Target& default_target();  // target_by_name(kDefaultTargetName)
// The target `weft compile` (µGraphs and models) and the Python package's compile functions lower
// for when none is given: the one whose code runs on this machine.
inline constexpr std::string_view kDefaultCompileTargetName = "cpu";

}  // namespace weft
