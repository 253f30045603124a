// Serializes cost reports and roofline floors to JSON, times in microseconds.
#include "cost/cost_json.h"

namespace weft {

nlohmann::ordered_json cost_report_json(const CostReport& r) {
  nlohmann::ordered_json kernels = nlohmann::ordered_json::array();
  for (const KernelCost& k : r.kernels) {
    nlohmann::ordered_json j;
    j["name"] = k.name;
    j["op"] = k.op;
    j["graph_defined"] = k.graph_defined;
    j["launched"] = k.launched;
    j["dram_bytes"] = k.dram_bytes;
    j["requested_bytes"] = k.requested_bytes;
    j["l2_hit_bytes"] = k.l2_hit_bytes;
    j["store_bytes"] = k.store_bytes;
    j["smem_bytes"] = k.smem_bytes;
    j["tensor_flops"] = k.tensor_flops;
    j["cuda_flops"] = k.cuda_flops;
    j["blocks"] = k.blocks;
    j["loop"] = k.loop;
    j["smem_per_block"] = k.smem_per_block;
    j["blocks_per_sm"] = k.blocks_per_sm;
    j["waves"] = k.waves;
    j["launch_us"] = k.launch_s * 1e6;
    j["memory_us"] = k.memory_s * 1e6;
    j["compute_us"] = k.compute_s * 1e6;
    j["time_us"] = k.time_s * 1e6;
    j["bound"] = std::string(bound_name(k.bound));
    kernels.push_back(std::move(j));
  }
  nlohmann::ordered_json out;
  out["target"] = r.target;
  out["total_us"] = r.total_s * 1e6;
  out["launches"] = r.kernel_launches();
  out["kernels"] = std::move(kernels);
  return out;
}

nlohmann::ordered_json roofline_json(const Roofline& f) {
  nlohmann::ordered_json j;
  j["bytes"] = f.bytes;
  j["tensor_flops"] = f.tensor_flops;
  j["cuda_flops"] = f.cuda_flops;
  j["memory_us"] = f.memory_s * 1e6;
  j["compute_us"] = f.compute_s * 1e6;
  j["floor_us"] = f.floor_s * 1e6;
  return j;
}

}  // namespace weft
