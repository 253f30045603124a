// The kernel plan: the loop-level IR every backend (CPU, CUDA) emits code from.
//
// A ProgramPlan lists the program's device tensors and its kernels in launch order. A library
// kernel is one `call` of a pre-defined operator on device tensors. A graph-defined kernel runs
// grid x y x z blocks of `threads` threads; each block runs `loop` iterations of `loop_steps`
// (loads of device tiles into shared memory, body ops, accumulation), then `post_steps` (post-loop
// ops and stores back to device memory). Loads of loop-invariant tiles are marked `hoisted` and
// issued once before the loop. Block buffers live in shared memory (with a byte offset
// and a layout) or in registers (thread-graph values, matmul results fused into an accumulator);
// barriers separate dependent schedule levels. Every decision a backend needs is a field of the
// plan, so generated code is a function of the plan alone.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/shape.h"
#include "ir/attrs.h"
#include "ir/interface.h"
#include "ir/ops.h"

namespace weft {

enum class MemSpace : uint8_t { device, shared, reg };
enum class TensorRole : uint8_t { input, output, temp };  // device tensors only
enum class StepKind : uint8_t { load, compute, thread, accum, store, barrier, call };

std::string_view mem_space_name(MemSpace s);
std::string_view tensor_role_name(TensorRole r);
std::string_view step_kind_name(StepKind k);

struct PlanBuffer {
  std::string name;
  MemSpace space = MemSpace::shared;
  TensorRole role = TensorRole::temp;  // device tensors only
  DType dtype = DType::f32;
  Shape shape;
  int contiguous_dim = 0;  // the dim with stride 1; the others follow in row-major order
  int swizzle = 0;  // XOR swizzle of the 16-byte chunks of each 128-byte segment (GPU; 0 = none)
  int64_t offset = -1;  // bytes from the base of its space; -1: unassigned or a user buffer

  int64_t bytes() const { return numel(shape) * dtype_bytes(dtype); }
  // Bytes of a row along the contiguous dim: the swizzle keys on rows of a multiple of 128 bytes
  // (docs/cuda-backend.md).
  int64_t row_bytes() const { return shape.at(contiguous_dim) * dtype_bytes(dtype); }
  friend bool operator==(const PlanBuffer&, const PlanBuffer&) = default;
};

// Element strides of a tensor stored with `contiguous_dim` innermost and the remaining dims in
// row-major order.
std::vector<int64_t> layout_strides(const Shape& shape, int contiguous_dim);

struct Step {
  StepKind kind = StepKind::compute;
  OpKind op = OpKind::add;           // load: iter, store: save, thread: thread, barrier: unused
  std::vector<std::string> outputs;  // buffer names (store: the device tensor)
  std::vector<std::string> inputs;   // buffer names (load: the device tensor)
  Attrs attrs;
  int depth = 0;           // schedule level within its stage
  std::vector<Step> body;  // thread: compute steps over register buffers
  // accum (GPU, lower/fuse_accumulators.h): the sum stays in the fused matmul's mma fragments
  // during the loop and is written to its shared buffer once after it, so that buffer is live only
  // in the post stage. Printed as the word `registers`.
  bool in_registers = false;
  // load (lower/hoist_loads.h): the tile is the same every iteration (no fmap), so it is loaded
  // once before the loop into a single buffer that stays live through the whole loop (never
  // pipelined). Printed as the word `hoisted`.
  bool hoisted = false;
  // compute matmul in a block (CPU, lower/choose_cpu_blocking.h): the rows x columns of C the
  // generated loops keep in registers over the whole k loop; {0, 0} where no CPU loop nest is
  // emitted (GPU plans, library kernels, other steps). Printed as `tile=[R,C]` when set.
  std::array<int64_t, 2> register_tile = {0, 0};

  friend bool operator==(const Step&, const Step&) = default;
};

// A library kernel's call step may run a device kernel of the model executor's library
// (codegen/cuda/device/model_kernels.cuh) instead of its operator's own code: a plan built from a
// traced model run (driver/model_megakernel_plan.h). Its attributes: `dk` the kernel family
// (codegen/cuda/model_kernel_families.h), `dk_args` the argument struct as 64-bit words (pointers
// zero), `dk_ptrs` per pointer field set (field, operand, byte offset) triples, the operand
// indexing inputs then outputs, `dk_work` the elements its body strides over and `dk_tasks` the
// tasks a persistent kernel divides them into (each task strides over its share; every task reads
// and writes the operands whole). `op` names the model operator it ran for. Only the CUDA backend
// emits these; other consumers refuse them.
bool is_device_kernel_call(const Step& s);

struct KernelPlan {
  std::string name;
  bool library = false;  // a pre-defined operator: steps = one call, no blocks or buffers
  std::array<int64_t, 3> grid = {1, 1, 1};
  int64_t threads = 128;
  int64_t loop = 1;
  // Pipeline depth of the loop's loads: with stages > 1 every buffer a loop-stage load (not
  // hoisted) writes has `stages` slots of stage_stride() bytes from its offset, iteration `it`
  // using slot it % stages, so the loads of the next stages - 1 iterations run while this one
  // computes (GPU; CPU: 1).
  int64_t stages = 1;
  // Blocks one CPU task runs in lock-step, iteration by iteration, each over its own arena
  // (lower/choose_cpu_blocking.h): their tiles of a shared operand are fetched close together in
  // time. Divides num_blocks(). GPU: 1.
  int64_t block_group = 1;
  std::vector<PlanBuffer> buffers;  // shared and register buffers of one block
  std::vector<Step> loop_steps;     // library: the single call step
  std::vector<Step> post_steps;
  int64_t smem_bytes = 0;  // peak shared memory of one block (after memory planning)

  int64_t num_blocks() const { return grid[0] * grid[1] * grid[2]; }
  const PlanBuffer* find_buffer(const std::string& name) const;
  PlanBuffer* find_buffer(const std::string& name);
  friend bool operator==(const KernelPlan&, const KernelPlan&) = default;
};

// Tasks (blocks) of a library kernel in a persistent kernel: dk_tasks for a device-kernel call,
// else 1.
int64_t library_tasks(const KernelPlan& k);

// Bytes between the pipeline slots of a loaded buffer: its size rounded up to 128 bytes (a
// swizzle row), so every slot keeps the buffer's alignment.
int64_t stage_stride(const PlanBuffer& b);
// True when `name` is written by a loop-stage load, not hoisted, of a kernel with stages > 1.
bool is_pipelined(const KernelPlan& k, const std::string& name);
// Shared-memory footprint of a buffer: stages x stage_stride for pipelined buffers, else bytes().
int64_t footprint_bytes(const KernelPlan& k, const PlanBuffer& b);

struct ProgramPlan {
  std::string name;
  std::string target;
  std::vector<PlanBuffer> tensors;  // device tensors, role input/output/temp
  std::vector<std::string> inputs;  // program inputs and outputs, in order
  std::vector<std::string> outputs;
  std::vector<ProgramInterface> interfaces;  // the program's, unread by lowering and the backends
  std::vector<KernelPlan> kernels;           // launch order
  int64_t workspace_bytes = 0;  // device memory for temp tensors (after memory planning)

  const PlanBuffer* find_tensor(const std::string& name) const;
  PlanBuffer* find_tensor(const std::string& name);
  friend bool operator==(const ProgramPlan&, const ProgramPlan&) = default;
};

}  // namespace weft
