// The roofline floor of an input program: no µGraph can beat reading each input once, writing each
// output once, and doing the program's contractions at the target's sustained rates.
#include "cost/roofline.h"

#include <algorithm>

#include "cost/op_work.h"

namespace weft {

// Only contractions count as unavoidable arithmetic: elementwise and reduction work can shrink
// under algebraic rewriting (fused attention divides the 64-wide output, not the 4096-wide
// scores), so counting it would put the floor above reachable µGraphs. Graph-defined kernels (not
// in input programs, but priced the same way) count their block matmuls once per iteration of
// the loop stage and once per block.
static void add_matmul_flops(const Graph& g, double times, const Target& target, Roofline& r) {
  for (const Op& op : g.ops) {
    if (op.kind == OpKind::kernel && op.body) {
      add_matmul_flops(*op.body, times * static_cast<double>(op.body->num_blocks()), target, r);
      continue;
    }
    if (op.kind != OpKind::matmul) continue;
    const TensorType& a = g.type(op.inputs[0]);
    double reps = g.level == Level::block && op.stage == Stage::loop ? g.loop : 1;
    double f = times * reps * matmul_dims(a, g.type(op.inputs[1])).flops();
    (on_tensor_cores(a.dtype, target) ? r.tensor_flops : r.cuda_flops) += f;
  }
}

Roofline roofline(const Graph& g, const Target& target) {
  if (g.level != Level::kernel)
    throw UserError(g.loc, "the roofline floor is defined for kernel graphs; this is a " +
                               std::string(level_name(g.level)) + " graph");
  Roofline r;
  for (ValueId v : g.inputs) r.bytes += tensor_bytes(g.type(v));
  for (ValueId v : g.outputs) r.bytes += tensor_bytes(g.type(v));
  add_matmul_flops(g, 1.0, target, r);
  r.memory_s = r.bytes / target.dram_bytes_per_s;
  double tc = target.tensor_flops_f16 > 0 ? r.tensor_flops / target.tensor_flops_f16 : 0;
  r.compute_s = tc + r.cuda_flops / target.cuda_flops_f32;
  r.floor_s = std::max(r.memory_s, r.compute_s);
  return r;
}

double roofline_floor(const Graph& g, const Target& target) {
  return roofline(g, target).floor_s;
}

}  // namespace weft
