// Matmul-into-accumulator fusion and register accumulators as plan properties, and reading them
// back from a plan.
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
  for (KernelPlan& k : p.kernels) {
    for (const AccumulatorFusion& f : accumulator_fusions(k)) {
      // Tensor cores are a GPU's: CPU plans keep every buffer in f32, which mma never takes.
      WEFT_CHECK(!f.registers || target.kind == TargetKind::gpu,
                 "kernel {}: a tensor-core tiling of {} on the CPU target {}", k.name, f.product,
                 target.name);
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

std::vector<AccumulatorFusion> planned_accumulator_fusions(const KernelPlan& k) {
  std::vector<AccumulatorFusion> planned;
  if (k.library) return planned;
  for (const Step& acc : k.loop_steps) {
    if (acc.kind != StepKind::accum) continue;
    const PlanBuffer* x = k.find_buffer(acc.inputs.at(0));
    bool fused = x != nullptr && x->space == MemSpace::reg;
    WEFT_CHECK(!acc.in_registers || fused, "kernel {}: {} in registers without a fused matmul",
               k.name, acc.outputs[0]);
    if (!fused) continue;
    bool from_matmul = false;
    for (const Step& s : k.loop_steps)
      from_matmul = from_matmul || (s.kind == StepKind::compute && s.op == OpKind::matmul &&
                                    s.outputs.at(0) == acc.inputs[0]);
    WEFT_CHECK(from_matmul && acc.op == OpKind::accum_sum,
               "kernel {}: {} reads the register value {}, not a fused matmul", k.name,
               acc.outputs[0], acc.inputs[0]);
    planned.push_back({acc.inputs[0], acc.outputs[0], acc.in_registers});
  }
  WEFT_CHECK(planned == accumulator_fusions(k),
             "kernel {}: the plan's accumulator fusions disagree with lower/fuse_accumulators",
             k.name);
  return planned;
}

}  // namespace weft
