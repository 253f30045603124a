// JSON form of a cost report (for `weft cost --json` and the search's summaries).
#pragma once

#include <nlohmann/json.hpp>

#include "cost/cost_model.h"

namespace weft {

// {"target", "total_us", "launches", "kernels": [{name, op, graph_defined, launched, dram_bytes,
// requested_bytes, l2_hit_bytes, store_bytes, smem_bytes, tensor_flops, cuda_flops, blocks, loop,
// smem_per_block, blocks_per_sm, waves, launch_us, memory_us, compute_us, time_us, bound}]}.
// Keys in a fixed order; numbers as computed (deterministic for a given graph and target).
nlohmann::ordered_json cost_report_json(const CostReport& report);
// {"bytes", "tensor_flops", "cuda_flops", "memory_us", "compute_us", "floor_us"}.
nlohmann::ordered_json roofline_json(const Roofline& floor);

}  // namespace weft
