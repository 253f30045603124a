// CUDA backend, task bodies for the persistent mega-kernel: every kernel of a plan as a CTA-level
// device function a worker CTA runs for one task (docs/mpk.md, "Task bodies from kernel plans").
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "lower/plan.h"

namespace weft {

struct TaskBodyOptions {
  // Threads of every worker CTA (a multiple of 32, at most 1024); 0: the largest graph-defined
  // body's threads rounded up to 32 (256 when every kernel is a library kernel).
  int worker_threads = 0;
  // Dynamic shared memory a worker CTA gives a body; 0: the target's per-block opt-in limit
  // (Target::smem_per_block_bytes: 227 KiB on h100/h200, 163 KiB on a100) minus
  // runtime_smem_reserve_bytes.
  int64_t smem_budget_bytes = 0;
  // Shared memory the persistent kernel keeps for itself (its static __shared__ state), taken off
  // the default budget.
  int64_t runtime_smem_reserve_bytes = 0;
  // Threads the persistent kernel adds to every worker CTA beyond the bodies' (its protocol
  // warp): the worker's threads plus these must fit a CTA.
  int runtime_threads = 0;
  // Bodies the plan does not hold (the decode loop's, mpk/decode_tasks.h): non-empty, kernel
  // indices from plan.kernels.size() on call this function with the index less the plan's kernel
  // count and weft_mpk_task's other arguments (declared by the bodies' text, defined by text after
  // it); they run on every worker thread and need `extra_smem_bytes` of shared memory.
  std::string extra_task_function;
  int64_t extra_smem_bytes = 0;
  // Plan inputs that no task of the launch writes (no plan kernel, no body beyond the plan), in
  // any iteration: only these are __restrict__ in the bodies (emit_cuda_source's kernels take
  // every tensor so). Empty: none.
  std::vector<std::string> read_only_tensors;
};

// What one plan kernel's body needs.
struct TaskBodyFigure {
  std::string kernel;
  bool library = false;
  bool gemm = false;  // a library matmul (the device GEMM)
  int threads = 0;    // threads the body runs on (library bodies: every worker thread)
  int64_t smem_bytes = 0;
  int64_t tasks = 0;  // blocks of its grid (library: lower/plan.h's library_tasks)
};

struct TaskBodyFit {
  int worker_threads = 0;
  int64_t smem_budget_bytes = 0;
  int64_t body_smem_bytes = 0;  // the largest body's shared memory (weft_mpk_body_smem_bytes)
  int max_body_threads = 0;     // the most threads a body uses
  std::vector<TaskBodyFigure> bodies;       // plan kernel order
  std::string extra_task_function;          // TaskBodyOptions's
  std::set<std::string> read_only_tensors;  // TaskBodyOptions's
};

// The tiles of the device GEMM for an m x n product (C = A B, per batch element): bm x bn outputs
// per tile, bk-deep slices of A (bm x (bk + 1) floats, padded) and B (bk x bn floats) staged in
// shared memory, A's first.
struct CtaGemmTile {
  int bm = 64, bn = 64, bk = 16;
  int64_t a_floats() const { return int64_t{bm} * (bk + 1); }
  int64_t smem_bytes() const { return 4 * (a_floats() + int64_t{bk} * bn); }
};
CtaGemmTile cta_gemm_tile(int64_t m, int64_t n);

// Resolves the options for `plan` (lowered for a GPU target) and checks every body fits a worker
// CTA: a graph-defined body's threads at most the worker's, every body's shared memory within the
// budget. A body that does not fit, or a worker size that is not a multiple of 32 in [32, 1024]
// (less TaskBodyOptions::runtime_threads), is a UserError naming the kernel and the numbers. A
// read-only tensor that is not a plan input, or that a plan kernel writes, is an internal error.
TaskBodyFit fit_task_bodies(const ProgramPlan& plan, const TaskBodyOptions& options);

// The task bodies of `plan` (after fit_task_bodies' checks), text to put after the CUDA prelude
// (codegen/cuda/prelude.h) of a unit. It defines
//   constexpr int weft_mpk_worker_threads;   // threads every worker CTA must have
//   constexpr int weft_mpk_body_smem_bytes;  // dynamic shared memory the largest body needs
//   constexpr uint32_t weft_mpk_kernel_count;
//   WEFT_DEV void weft_mpk_task(uint32_t kernel, int bx, int by, int bz, unsigned char* smem,
//                               void* const* inputs, void* const* outputs,
//                               unsigned char* workspace);
// weft_mpk_task runs block (bx, by, bz) of plan kernel `kernel` (library kernels: the whole
// kernel, block 0). Every thread of the worker CTA calls it; threads beyond the body's return at
// once, the body synchronizes its own threads only (named barrier 1), and the caller synchronizes
// the CTA afterwards. inputs / outputs / workspace are those of weft_cuda_launch (plan input and
// output order, the device-memory plan's workspace); smem is 128-byte aligned with at least
// weft_mpk_body_smem_bytes bytes. Graph-defined kernels run their block functions K_block
// (emit_cuda.h), library matmuls a shared-memory tiled GEMM (weft_cta_gemm, the prelude), other
// library kernels their element loops over the CTA's threads. Defined in emit_cuda.cpp.
std::string emit_cuda_task_bodies(const ProgramPlan& plan, const TaskBodyOptions& options = {});

// How a check unit runs the bodies.
enum class TaskBodyLaunch : uint8_t {
  one_cta,     // one launch of one worker CTA running every task in launch order
  per_kernel,  // one launch per plan kernel: its grid (library: 1) of worker CTAs
};

// Bodies beyond the plan's (TaskBodyOptions::extra_task_function) that a check unit runs around
// the plan's kernels, each as one worker CTA (per_kernel: a launch of a one-CTA grid): `before`
// the plan's kernels and `after` them, by their index past the plan's kernels, named in comments;
// `text` (defining the extra function) is pasted after the plan's bodies.
struct CheckUnitExtras {
  struct Body {
    uint32_t index = 0;  // the kernel index less plan.kernels.size()
    std::string name;
  };
  std::string text;
  std::vector<Body> before, after;
};

// A whole unit with the weft_cuda_launch ABI of emit_cuda_source (prelude, the bodies, a kernel
// calling weft_mpk_task, the entry points) that runs the bodies without the mega-kernel's
// runtime: the outputs of the plan's program, from the task bodies alone. Tests run it in host
// emulation against emit_cuda_source's unit. With `extras` one call of weft_cuda_launch also runs
// those bodies before and after the plan's (the per-kernel decode step,
// mpk/runtime/per_kernel_decode.h).
std::string emit_task_bodies_check_unit(const ProgramPlan& plan, const TaskBodyOptions& options,
                                        TaskBodyLaunch launch, const CheckUnitExtras& extras = {});

}  // namespace weft
