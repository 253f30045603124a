// Marks loop-invariant loads as issued once before the loop.
#include "lower/hoist_loads.h"

namespace weft {

ProgramPlan hoist_invariant_loads(const ProgramPlan& plan) {
  ProgramPlan p = plan;
  for (KernelPlan& k : p.kernels) {
    if (k.library || k.loop <= 1) continue;
    for (Step& s : k.loop_steps)
      if (s.kind == StepKind::load && s.attrs.get_int_or("fmap", -1) < 0) s.hoisted = true;
  }
  return p;
}

}  // namespace weft
