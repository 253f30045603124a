// The cost model: predicted run time of a µGraph on a target, kernel by kernel, from first
// principles (bytes, flops, waves, pipelining, launches). docs/cost-model.md derives every term.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/target.h"
#include "cost/roofline.h"
#include "ir/graph.h"

namespace weft {

// The resource that dominates a kernel's predicted time.
enum class Bound : uint8_t { memory, compute, launch };
std::string_view bound_name(Bound b);

// One kernel launch of the µGraph: a graph-defined kernel or one pre-defined operator.
struct KernelCost {
  std::string name;  // first result of the kernel-graph op
  std::string op;    // "kernel" or the pre-defined operator's name
  bool graph_defined = false;
  bool launched = true;  // false for free views (reshape): no kernel, no time

  // Traffic. requested: what the SMs ask of the memory system (an input replicated across blocks
  // counts once per block); l2_hit: the part of it served by L2; dram = requested - l2_hit +
  // stores.
  double requested_bytes = 0;
  double l2_hit_bytes = 0;
  double store_bytes = 0;
  double dram_bytes = 0;
  double smem_bytes = 0;    // shared-memory reads + writes, whole kernel
  double tensor_flops = 0;  // on tensor cores (f16/bf16 matmul), padded to the MMA shape
  double cuda_flops = 0;    // on CUDA cores (elementwise, reductions, f32), in FP32 op slots x2

  // Launch geometry (graph-defined kernels; the library's tiling for matmul; 0 when not modeled).
  int64_t blocks = 0;
  int64_t loop = 1;
  int64_t smem_per_block = 0;  // estimate used for occupancy
  int64_t blocks_per_sm = 0;
  int64_t waves = 0;

  // Time split (seconds). memory_s includes load latency that is not hidden.
  double launch_s = 0;
  double memory_s = 0;
  double compute_s = 0;
  double time_s = 0;  // what the kernel adds to the total (not the sum of the parts: they overlap)
  Bound bound = Bound::launch;
};

struct CostReport {
  std::string target;
  std::vector<KernelCost> kernels;  // in kernel-graph order (the launch order)
  double total_s = 0;
  int kernel_launches() const;
};

// Predicted time of `kernel_graph` (a kernel-level µGraph: pre-defined operators and
// graph-defined kernels) on `target`. Kernels run one after another in graph order. Cheap
// (linear in the number of operators) and deterministic. Throws UserError for a non-kernel graph.
CostReport predict(const Graph& kernel_graph, const Target& target);

}  // namespace weft
