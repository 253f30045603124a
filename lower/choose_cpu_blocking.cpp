// Register tiles and block groups of the CPU backend.
#include "lower/choose_cpu_blocking.h"

#include <algorithm>

#include "core/error.h"

namespace weft {

std::array<int64_t, 2> cpu_register_tile(int64_t m, int64_t n) {
  WEFT_CHECK(m >= 1 && n >= 1, "matmul result {} x {}", m, n);
  int64_t columns = std::min(kMaxTileColumns, n);
  while (n % columns != 0) --columns;
  int64_t rows = 1;
  while (rows * 2 <= kMaxTileRows && m % (rows * 2) == 0) rows *= 2;
  return {rows, columns};
}

int64_t cpu_block_group(int64_t num_blocks, int64_t smem_bytes) {
  for (int64_t g = kMaxBlockGroup; g >= 2; g /= 2)
    if (num_blocks % g == 0 && num_blocks / g >= kMinTasks && g * smem_bytes <= kMaxGroupArenaBytes)
      return g;
  return 1;
}

ProgramPlan choose_cpu_blocking(const ProgramPlan& plan, const Target& target) {
  ProgramPlan p = plan;
  for (KernelPlan& k : p.kernels) {
    if (k.library) continue;
    bool cpu = target.kind == TargetKind::cpu;
    k.block_group = cpu ? cpu_block_group(k.num_blocks(), k.smem_bytes) : 1;
    for (auto* steps : {&k.loop_steps, &k.post_steps})
      for (Step& s : *steps) {
        if (s.kind != StepKind::compute || s.op != OpKind::matmul) continue;
        s.register_tile = {0, 0};
        if (!cpu) continue;
        const PlanBuffer* c = k.find_buffer(s.outputs.at(0));
        WEFT_CHECK(c != nullptr && c->shape.size() >= 2, "matmul result {} has no buffer",
                   s.outputs.at(0));
        size_t r = c->shape.size();
        s.register_tile = cpu_register_tile(c->shape[r - 2], c->shape[r - 1]);
      }
  }
  return p;
}

}  // namespace weft
