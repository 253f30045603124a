// The decode loop's own tasks, for a persistent kernel that keeps the decode state on the device:
// the next token's embedding, the rotary tables of its position, the KV-cache appends and the
// greedy argmax (which also sets the mask entry and advances the position) become tasks of the
// step's task graph with hand-written bodies (mpk/device/decode_bodies.cuh), so no host work sits
// between steps and N steps can run in one launch (docs/mpk.md, "The decode loop on the device").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/cuda/emit_task_bodies.h"
#include "lower/plan.h"
#include "mpk/decode_demo.h"
#include "mpk/task_graph.h"

namespace weft {

// Where the decode state lives: in the workspace, after the plan's temps.
//   state     f32[2 + T + 1]: position p, prompt length, tokens 0..T (written by the tasks)
//   inv_freq  f64[dh / 2]: the rotary inverse frequencies (constant; -1 without COS)
//   table     f32[V, D]: the host-held embedding table of a program without EMB (constant; -1
//             with EMB)
struct DecodeDeviceLayout {
  int64_t state_offset = 0, state_words = 0;
  int64_t inv_freq_offset = -1, table_offset = -1;
  int64_t workspace_bytes = 0;  // the whole workspace, the plan's temps included
};
DecodeDeviceLayout decode_device_layout(const ProgramPlan& plan, const DecodeInterface& i);

enum class DecodeBody : uint8_t { embed, rope_tables, finish };

// The decode operators, one task each, in kernel-index order from plan.kernels.size(): embed,
// rope_tables (with COS), finish (every layer's KV-cache append, then the argmax, which sets the
// mask entry and advances the position). The appends share the last task rather than one per layer
// after its attention: a task only `end` (or the last task) waits for, placed early in the linear
// order, keeps later events from being barriers, and hybrid dispatch would then send most of the
// step just in time (298 of 345 tasks JIT in the Qwen3-tiny step at 3 workers; docs/mpk.md).
struct DecodeOp {
  DecodeBody body;
  std::string name;
};
std::vector<DecodeOp> decode_ops(const DecodeInterface& i);

// Pass (run by compile_task_graph right after decompose when MpkOptions::decode_on_device): `g`,
// decomposed from `plan`, with the decode operators added, embed and rope_tables before the plan's
// operators and finish after them (program order, which the deps pass turns into edges), their
// accesses whole tensors plus the state. UserError when the plan does not follow the decode
// interface (mpk/decode_demo.h).
TaskGraph add_decode_tasks(const TaskGraph& g, const ProgramPlan& plan);

// The function the plan's task bodies call for kernel indices past the plan's
// (TaskBodyOptions::extra_task_function), and the shared memory its bodies need.
inline constexpr const char* kDecodeTaskFunction = "weft_mpk_decode_task";
int64_t decode_bodies_smem_bytes(int worker_threads);

// `bodies` with the decode bodies added (extra_task_function, their shared memory at the resolved
// worker size, and as read-only tensors the inputs no decode task writes): the options both the
// persistent kernel and the per-kernel decode loop (mpk/per_kernel_decode.h) emit the plan's
// bodies with, so both run the same body code.
TaskBodyOptions with_decode_bodies(const ProgramPlan& plan, TaskBodyOptions bodies);

// Text defining kDecodeTaskFunction: the bodies of decode_bodies.cuh with the plan's tensors and
// sizes, for a unit whose plan bodies (emit_cuda_task_bodies) precede it.
std::string emit_decode_task_bodies(const ProgramPlan& plan);

}  // namespace weft
