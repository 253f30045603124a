// Matmul-into-accumulator fusion and register accumulators as plan properties.
#include "lower/fuse_accumulators.h"

#include <map>

#include "core/error.h"
#include "lower/mma_tiling.h"

namespace weft {

std::vector<AccumulatorFusion> accumulator_fusions(const KernelPlan& k) {
  std::vector<AccumulatorFusion> out;
  if (k.library) return out;
  std::map<std::string, int> readers, loop_readers;
  for (const auto* steps : {&k.loop_steps, &k.post_steps})
    for (const Step& s : *steps)
      for (const std::string& in : s.inputs) {
        ++readers[in];
        if (steps == &k.loop_steps) ++loop_readers[in];
      }
  std::map<std::string, const Step*> matmul_of;  // loop-stage matmuls by result
  for (const Step& s : k.loop_steps)
    if (s.kind == StepKind::compute && s.op == OpKind::matmul) matmul_of[s.outputs.at(0)] = &s;
  for (const Step& acc : k.loop_steps) {
    if (acc.kind != StepKind::accum || acc.op != OpKind::accum_sum) continue;
    const std::string& product = acc.inputs.at(0);
    auto mm = matmul_of.find(product);
    // A sum read inside the loop must exist in shared memory every iteration.
    if (mm == matmul_of.end() || readers[product] != 1 || loop_readers[acc.outputs.at(0)] != 0)
      continue;
    out.push_back({product, acc.outputs.at(0), mma_tiling(k, *mm->second).has_value()});
  }
  return out;
}

ProgramPlan fuse_accumulators(const ProgramPlan& plan, const Target& target) {
  ProgramPlan p = plan;
  if (target.kind != TargetKind::gpu) return p;
  for (KernelPlan& k : p.kernels) {
    for (const AccumulatorFusion& f : accumulator_fusions(k)) {
      PlanBuffer* b = k.find_buffer(f.product);
      WEFT_CHECK(b != nullptr, "matmul result {} has no buffer", f.product);
      // Like every register value: no offset, and no layout to speak of.
      b->space = MemSpace::reg;
      b->offset = -1;
      b->contiguous_dim = static_cast<int>(b->shape.size()) - 1;
      b->swizzle = 0;
      if (!f.registers) continue;
      for (Step& s : k.loop_steps)
        if (s.kind == StepKind::accum && s.outputs.at(0) == f.accumulator) s.in_registers = true;
    }
  }
  return p;
}

}  // namespace weft
