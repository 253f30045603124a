// Pass: layout selection. Chooses each shared buffer's contiguous dim and swizzle.
#pragma once

#include "core/target.h"
#include "lower/plan.h"

namespace weft {

// An exact minimization over every combination of layouts (per connected group of buffers that
// share a cost term) of the cost table in docs/lowering.md:
//   hard constraints: matmul operands and results keep the contiguous dim among their last two;
//     reshape operands and results stay row-major (reshape is defined on row-major order);
//   load / store of a tile whose contiguous dim is not the device tensor's last: 4 per element;
//   an elementwise / reduction / accumulation / copy step whose operand and result differ in
//     contiguous dim: 1 per element of the larger;
//   a matmul operand with its contiguous dim not the one the inner product walks (k for A, n for
//     B): 1 per element; GPU only: a matmul operand not swizzled where the swizzle would remove
//     its ldmatrix bank conflicts (swizzle_removes_bank_conflicts): 2 per element.
// Ties go to the row-major, unswizzled layout. CPU targets never swizzle. Groups with more than
// 2^20 combinations keep row-major layouts (with the best swizzle each).
ProgramPlan select_layouts(const ProgramPlan& plan, const Target& target);

// Whether the ldmatrix phases the CUDA emitter issues on `b` (8 rows x 16 bytes, from a multiple
// of 8 rows) conflict in shared-memory banks unswizzled and not swizzled (weft_swz): rows of a
// multiple of 128 bytes (8-way unswizzled), or of 32 or 64 bytes (2- and 4-way) in a buffer
// of a multiple of 128 bytes, which a swizzled buffer must be. Rows of 16 bytes never conflict.
bool swizzle_removes_bank_conflicts(const PlanBuffer& b);

// The cost of a kernel's current layouts under the table above (for tests and reports).
int64_t layout_cost(const KernelPlan& kernel, const Target& target);

}  // namespace weft
