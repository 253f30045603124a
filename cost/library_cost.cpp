// Pre-defined kernel operators priced as library kernels: bandwidth-bound streaming for
// elementwise, reduction, composite and copy operators; a tiled GEMM model for matmul.
#include "cost/library_cost.h"

#include <algorithm>

#include "cost/op_work.h"

namespace weft {

static int64_t round_up(int64_t x, int64_t m) {
  return (x + m - 1) / m * m;
}
static int64_t ceil_div(int64_t x, int64_t m) {
  return (x + m - 1) / m;
}

void classify_bound(KernelCost& c) {
  if (c.launch_s >= c.memory_s && c.launch_s >= c.compute_s)
    c.bound = Bound::launch;
  else
    c.bound = c.memory_s >= c.compute_s ? Bound::memory : Bound::compute;
}

KernelCost library_kernel_cost(const Graph& g, const Op& op, const Target& target) {
  const OpInfo& info = op_info(op.kind);
  WEFT_CHECK(op.kind != OpKind::kernel, "graph-defined kernel priced as a library op");
  KernelCost c;
  c.name = op.outputs.empty() ? std::string() : g.value(op.outputs[0]).name;
  c.op = info.name;
  if (op.kind == OpKind::reshape) {  // a view: no kernel, no traffic
    c.launched = false;
    c.bound = Bound::launch;
    return c;
  }
  double in_bytes = 0, out_bytes = 0;
  for (ValueId v : op.inputs) in_bytes += tensor_bytes(g.type(v));
  for (ValueId v : op.outputs) out_bytes += tensor_bytes(g.type(v));
  c.requested_bytes = in_bytes;
  c.store_bytes = out_bytes;
  c.dram_bytes = in_bytes + out_bytes;
  c.launch_s = target.launch_overhead_s;
  const double sms = std::max(1, target.sm_count);

  if (op.kind == OpKind::matmul) {
    const TensorType& a = g.type(op.inputs[0]);
    MatmulDims d = matmul_dims(a, g.type(op.inputs[1]));
    bool tc = on_tensor_cores(a.dtype, target);
    // Tensor cores compute whole MMA tiles: M rounds up to a warpgroup MMA's 64 rows.
    double flops =
        tc ? 2.0 * d.batch * round_up(d.m, kLibMatmulMinM) * round_up(d.n, 8) * round_up(d.k, 16)
           : d.flops();
    int64_t tiles = d.batch * ceil_div(d.m, kLibMatmulTile) * ceil_div(d.n, kLibMatmulTile);
    // Wave quantization for grids of at least one wave; smaller grids are assumed split along K
    // (split-K / stream-K) to fill the machine.
    double wave_eff = 1.0;
    if (tiles >= target.sm_count && target.sm_count > 0) {
      int64_t waves = ceil_div(tiles, target.sm_count);
      wave_eff = static_cast<double>(tiles) / (static_cast<double>(waves) * sms);
    }
    double rate = tc ? target.tensor_flops_f16 : target.cuda_flops_f32;
    if (tc)
      c.tensor_flops = flops;
    else
      c.cuda_flops = flops;
    c.blocks = tiles;
    c.waves = ceil_div(tiles, std::max(1, target.sm_count));
    c.compute_s = flops / (rate * kLibMatmulComputeEfficiency * wave_eff);
    c.memory_s =
        target.dram_latency_s + c.dram_bytes / (target.dram_bytes_per_s * kLibMatmulMemEfficiency);
  } else {
    c.cuda_flops = cuda_flops_of(g, op);
    c.compute_s = c.cuda_flops / target.cuda_flops_f32;
    c.memory_s =
        target.dram_latency_s + c.dram_bytes / (target.dram_bytes_per_s * kLibStreamMemEfficiency);
  }
  c.time_s = c.launch_s + std::max(c.memory_s, c.compute_s);
  classify_bound(c);
  return c;
}

}  // namespace weft
