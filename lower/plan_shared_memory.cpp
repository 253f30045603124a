// Shared-memory offsets from buffer lifetimes.
#include "lower/plan_shared_memory.h"

#include "core/error.h"
#include "lower/lifetimes.h"

namespace weft {

ProgramPlan plan_shared_memory(const ProgramPlan& plan, const Target& target) {
  ProgramPlan p = plan;
  for (KernelPlan& k : p.kernels) {
    if (k.library) continue;
    // 128 bytes: a GPU swizzle row and two CPU cache lines, so vector loads stay aligned.
    Allocation a = allocate_intervals(shared_lifetimes(k), 128);
    for (const LiveBuffer& lb : a.buffers) k.find_buffer(lb.name)->offset = lb.offset;
    k.smem_bytes = a.peak;
    auto errors = check_shared_memory(k);
    WEFT_CHECK(errors.empty(), "shared-memory plan of {} overlaps: {}", k.name, errors.front());
    if (k.smem_bytes > target.smem_per_block_bytes)
      throw UserError(fmt::format(
          "kernel {} needs {} bytes of shared memory per block, more than the {} bytes {} allows",
          k.name, k.smem_bytes, target.smem_per_block_bytes, target.name));
  }
  return p;
}

}  // namespace weft
