// The decode loop on the device (docs/mpk.md, "The decode loop on the device"): where its state
// lives in the workspace, and its own operators, whose hand-written bodies
// (mpk/device/decode_bodies.cuh) embed the next token, compute the rotary tables of its position,
// append to the KV caches and choose the next token, so no host work sits between steps and N
// steps can run in one launch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lower/plan.h"
#include "mpk/decode_interface.h"

namespace weft {

// Where the decode state lives: in the workspace, after the plan's temps.
//   state     f32[2 + T + 1]: position p, prompt length, tokens 0..T (written by the tasks)
//   inv_freq  f64[dh / 2]: the rotary inverse frequencies (constant; -1 without rotary tables)
//   table     f32[V, D]: the embedding table the loop holds for a program without
//             embedding_table (constant; -1 with it)
struct DecodeDeviceLayout {
  int64_t state_offset = 0, state_words = 0;
  int64_t inv_freq_offset = -1, table_offset = -1;
  int64_t workspace_bytes = 0;  // the whole workspace, the plan's temps included
};
DecodeDeviceLayout decode_device_layout(const ProgramPlan& plan, const DecodeInterface& i);

enum class DecodeBody : uint8_t { embed, rope_tables, finish };

// The decode operators, one task each, in kernel-index order from plan.kernels.size(): embed,
// rope_tables (with rotary tables), finish (every layer's KV-cache append, then the argmax, which
// sets the mask entry and advances the position). The appends share the last task rather than one
// per layer after its attention: a task only `end` (or the last task) waits for, placed early in
// the linear order, keeps later events from being barriers, and hybrid dispatch would then send
// most of the step just in time (298 of 345 tasks JIT in the Qwen3-tiny step at 3 workers;
// docs/mpk.md).
struct DecodeOp {
  DecodeBody body;
  std::string name;
};
std::vector<DecodeOp> decode_ops(const DecodeInterface& i);

}  // namespace weft
