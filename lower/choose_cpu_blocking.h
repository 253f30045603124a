// Pass: CPU blocking. How the CPU backend's loops keep data close: the register tile of each
// block matmul and the number of blocks one task runs in lock-step.
#pragma once

#include <array>
#include <cstdint>

#include "core/target.h"
#include "lower/plan.h"

namespace weft {

// The register tile of a block matmul whose result C is m x n: the largest divisor of n up to
// kMaxTileColumns columns and the largest power of two dividing m up to kMaxTileRows rows, so
// there are no partial tiles. 8 x 32 f32 accumulators are 16 AVX-512 registers; each row of B is
// then loaded once per 8 rows of A.
inline constexpr int64_t kMaxTileRows = 8;
inline constexpr int64_t kMaxTileColumns = 32;
std::array<int64_t, 2> cpu_register_tile(int64_t m, int64_t n);

// Blocks per CPU task: the largest power of two up to kMaxBlockGroup that divides the block
// count, leaves at least kMinTasks tasks and keeps the group's arenas within kMaxGroupArenaBytes
// (so they stay in cache); else 1.
inline constexpr int64_t kMaxBlockGroup = 8;
inline constexpr int64_t kMinTasks = 4;
inline constexpr int64_t kMaxGroupArenaBytes = 4 << 20;
int64_t cpu_block_group(int64_t num_blocks, int64_t smem_bytes);

// On CPU targets, sets every graph-defined kernel's block_group (from its planned arena, so it
// runs after plan-shared-memory) and the register_tile of every block matmul step; GPU plans keep
// block_group 1 and no tiles. The CPU emitter reads both and decides neither.
ProgramPlan choose_cpu_blocking(const ProgramPlan& plan, const Target& target);

}  // namespace weft
