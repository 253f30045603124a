// Tensor-core tiling of block matmuls, shared by lowering and the CUDA emitter.
#include "lower/mma_tiling.h"

#include <algorithm>

namespace weft {

std::optional<MmaTiling> mma_tiling(const KernelPlan& k, const Step& s) {
  if (s.kind != StepKind::compute || s.op != OpKind::matmul) return std::nullopt;
  const PlanBuffer *a = k.find_buffer(s.inputs[0]), *b = k.find_buffer(s.inputs[1]),
                   *c = k.find_buffer(s.outputs[0]);
  if (!a || !b || !c || a->space != MemSpace::shared || b->space != MemSpace::shared)
    return std::nullopt;
  if (a->dtype != b->dtype || a->dtype == DType::f32 || k.threads % 32 != 0) return std::nullopt;
  int r = static_cast<int>(c->shape.size());
  if (a->contiguous_dim != r - 1 || b->contiguous_dim != r - 1) return std::nullopt;
  MmaTiling t;
  t.m = c->shape[r - 2];
  t.n = c->shape[r - 1];
  t.k = a->shape[r - 1];
  if (t.k % 16 != 0 || t.n % 8 != 0) return std::nullopt;
  for (int d = 0; d + 2 < r; ++d) t.nb *= c->shape[d];
  int64_t mt = (t.m + 15) / 16, nt = t.n / 8, warps = k.threads / 32;
  int64_t best_used = 0, best_load = 0;
  for (int64_t wm = 1; wm <= std::min(mt, warps); ++wm)
    for (int64_t wn = 1; wm * wn <= warps && wn <= nt; ++wn) {
      if (mt % wm || nt % wn) continue;
      int64_t used = wm * wn, load = mt / wm + nt / wn;
      if (used > best_used || (used == best_used && load < best_load)) {
        best_used = used;
        best_load = load;
        t.wm = wm;
        t.wn = wn;
      }
    }
  t.pm = mt / t.wm;
  t.pn = nt / t.wn;
  // The fragments stay in registers for the whole matmul (or loop): bound their count.
  if (t.fragment_floats() > kMaxMmaFragmentFloats) return std::nullopt;
  return t;
}

}  // namespace weft
