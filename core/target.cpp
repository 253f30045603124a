// The built-in hardware targets. Figures from vendor data sheets and measurements noted per row.
#include "core/target.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "core/error.h"

namespace weft {

static std::vector<Target> make_targets() {
  std::vector<Target> t;
  {
    Target a;
    a.name = "a100";
    a.description = "NVIDIA A100 SXM 80GB (sm_80)";
    a.arch = "sm_80";
    a.sm_count = 108;
    a.smem_per_block_bytes = 163 * 1024;
    a.smem_per_sm_bytes = 164 * 1024;
    a.l2_bytes = 40LL << 20;
    a.dram_bytes_per_s = 1.8e12;  // ~90% of 2.0 TB/s peak
    a.smem_bytes_per_s_per_sm = 128.0 * 1.41e9;
    a.tensor_flops_f16 = 312e12;
    a.cuda_flops_f32 = 19.5e12;
    a.launch_overhead_s = 3e-6;
    a.l2_bytes_per_s = 4.5e12;              // microbenchmarked L2 read bandwidth (~2.5x DRAM)
    a.sm_load_bytes_per_s = 64.0 * 1.41e9;  // 64 B/clk per SM from L2
    a.dram_latency_s = 0.6e-6;              // ~500 ns idle + queueing under load
    a.block_mma_fraction = 0.9;             // mma.sync is Ampere's native tensor-core path
    t.push_back(a);
  }
  {
    Target h;
    h.name = "h100";
    h.description = "NVIDIA H100 SXM 80GB (sm_90a)";
    h.arch = "sm_90a";
    h.sm_count = 132;
    h.smem_per_block_bytes = 227 * 1024;
    h.smem_per_sm_bytes = 228 * 1024;
    h.l2_bytes = 50LL << 20;
    h.dram_bytes_per_s = 3.0e12;  // measured device-to-device copy (3.35 TB/s peak)
    h.smem_bytes_per_s_per_sm = 128.0 * 1.83e9;
    h.tensor_flops_f16 = 800e12;  // measured dense bf16 (989 peak)
    h.cuda_flops_f32 = 67e12;
    h.launch_overhead_s = 2.5e-6;
    h.l2_bytes_per_s = 5.5e12;              // microbenchmarked L2 read bandwidth
    h.sm_load_bytes_per_s = 64.0 * 1.83e9;  // 64 B/clk per SM from L2
    h.dram_latency_s = 0.6e-6;              // ~500 ns idle + queueing under load
    h.block_mma_fraction = 0.6;             // mma.sync, not wgmma: ~FA2 vs FA3 on H100
    t.push_back(h);
  }
  {
    Target h;
    h.name = "h200";
    h.description = "NVIDIA H200 SXM 141GB (sm_90a)";
    h.arch = "sm_90a";
    h.sm_count = 132;
    h.smem_per_block_bytes = 227 * 1024;
    h.smem_per_sm_bytes = 228 * 1024;
    h.l2_bytes = 50LL << 20;
    h.dram_bytes_per_s = 4.3e12;  // measured copy (4.8 TB/s peak)
    h.smem_bytes_per_s_per_sm = 128.0 * 1.83e9;
    h.tensor_flops_f16 = 790e12;
    h.cuda_flops_f32 = 67e12;
    h.launch_overhead_s = 2.5e-6;
    h.l2_bytes_per_s = 5.5e12;  // same L2 as the H100
    h.sm_load_bytes_per_s = 64.0 * 1.83e9;
    h.dram_latency_s = 0.6e-6;
    h.block_mma_fraction = 0.6;
    t.push_back(h);
  }
  {
    Target c;
    c.name = "cpu";
    c.description = "host CPU (2 cores, AVX2-class)";
    c.kind = TargetKind::cpu;
    c.arch = "native";
    c.sm_count = 2;
    c.smem_per_block_bytes = 1 << 20;  // per-task working set kept in L2
    c.smem_per_sm_bytes = 1 << 20;
    c.l2_bytes = 32LL << 20;
    c.max_threads_per_block = 1;
    c.warp_size = 1;
    c.dram_bytes_per_s = 20e9;
    c.smem_bytes_per_s_per_sm = 100e9;
    c.tensor_flops_f16 = 0;
    c.cuda_flops_f32 = 2 * 2 * 16 * 3.0e9;  // 2 cores, 2 FMA/cycle of 8 floats
    c.launch_overhead_s = 5e-6;
    c.l2_bytes_per_s = 200e9;
    c.sm_load_bytes_per_s = 100e9;
    c.dram_latency_s = 0.1e-6;
    c.max_threads_per_sm = 1;
    c.max_blocks_per_sm = 1;
    t.push_back(c);
  }
  return t;
}

const std::vector<Target>& all_targets() {
  static const std::vector<Target> targets = make_targets();
  return targets;
}

const Target& target_by_name(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string known;
  for (const Target& t : all_targets()) {
    if (t.name == lower) return t;
    known += (known.empty() ? "" : ", ") + t.name;
  }
  throw UserError(fmt::format("unknown target '{}'; known targets: {}", name, known));
}

const Target& default_target() {
  return target_by_name(kDefaultTargetName);
}

}  // namespace weft
