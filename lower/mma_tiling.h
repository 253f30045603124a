// Tensor-core tiling of a block matmul: whether it can run on mma.sync and how its warps split it.
#pragma once

#include <cstdint>
#include <optional>

#include "lower/plan.h"

namespace weft {

// Output tiles of 16 x 8 over nb batch elements of an m x n result (contraction k); a grid of
// wm x wn warps, each owning pm x pn tiles and holding their f32 fragments (4 per tile per lane).
struct MmaTiling {
  int64_t nb = 1, m = 0, n = 0, k = 0, wm = 1, wn = 1, pm = 1, pn = 1;

  // f32 accumulator registers each thread holds for the whole result.
  int64_t fragment_floats() const { return nb * pm * pn * 4; }
  friend bool operator==(const MmaTiling&, const MmaTiling&) = default;
};

// The tiling of matmul step `s` of kernel `k` on tensor cores (m16n8k16), or nullopt when it
// cannot take that path: operands not both f16 or both bf16 in shared memory with their last dim
// contiguous, k not a multiple of 16, n not a multiple of 8, or more than kMaxMmaFragmentFloats
// accumulator floats per thread. Warps: the largest number of busy warps that divides the tile
// grid, then the fewest fragment loads. Lowering and the CUDA emitter both use it, so the plan's
// register decisions and the generated code cannot disagree.
inline constexpr int64_t kMaxMmaFragmentFloats = 64;
std::optional<MmaTiling> mma_tiling(const KernelPlan& k, const Step& s);

}  // namespace weft
