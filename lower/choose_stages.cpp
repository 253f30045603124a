// Pipeline depth from the target's shared-memory limit.
#include "lower/choose_stages.h"

#include <algorithm>

#include "lower/interval_alloc.h"
#include "lower/lifetimes.h"

namespace weft {

ProgramPlan choose_stages(const ProgramPlan& plan, const Target& target) {
  ProgramPlan p = plan;
  for (KernelPlan& k : p.kernels) {
    if (k.library) continue;
    k.stages = 1;
    if (target.kind != TargetKind::gpu) continue;
    // Hoisted loads run once before the loop: nothing to overlap, one buffer.
    bool has_loads = std::any_of(k.loop_steps.begin(), k.loop_steps.end(), [](const Step& s) {
      return s.kind == StepKind::load && !s.hoisted;
    });
    if (!has_loads) continue;
    for (int64_t s = std::min(kMaxStages, k.loop); s > 1; --s) {
      KernelPlan trial = k;
      trial.stages = s;
      if (allocate_intervals(shared_lifetimes(trial), 128).peak <= target.smem_per_block_bytes) {
        k.stages = s;
        break;
      }
    }
  }
  return p;
}

}  // namespace weft
