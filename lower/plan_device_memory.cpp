// Device workspace offsets for temp tensors.
#include "lower/plan_device_memory.h"

#include "core/error.h"
#include "lower/lifetimes.h"

namespace weft {

ProgramPlan plan_device_memory(const ProgramPlan& plan) {
  ProgramPlan p = plan;
  Allocation a = allocate_intervals(device_lifetimes(p), 256);
  for (const LiveBuffer& lb : a.buffers) p.find_tensor(lb.name)->offset = lb.offset;
  p.workspace_bytes = a.peak;
  auto errors = check_device_memory(p);
  WEFT_CHECK(errors.empty(), "device-memory plan overlaps: {}", errors.front());
  return p;
}

}  // namespace weft
