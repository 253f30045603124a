// The per-kernel decode loop on the device: each step launches the decode loop's own bodies
// (decode_embed, decode_rope_tables, decode_finish: mpk/device/decode_bodies.cuh) as one-CTA
// kernels around every plan kernel's grid of worker CTAs running the persistent kernel's task
// bodies, on the decode state in the workspace (decode_device_layout). A step has no host work, so
// on a GPU it can be captured once as a CUDA graph and replayed per token: the per-kernel and
// CUDA-graph comparisons for the persistent kernel's decode (docs/mpk.md, "The per-kernel path on
// the device").
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "codegen/cuda/emit_task_bodies.h"
#include "lower/plan.h"
#include "mpk/runtime/decode_data.h"
#include "runtime/program.h"

namespace weft {

// The check unit (emit_task_bodies_check_unit, per_kernel launches) whose weft_cuda_launch runs
// one decode step: decode_embed and decode_rope_tables (with COS), the plan's kernels in plan
// order, decode_finish. `bodies` as for the persistent kernel (with_decode_bodies is applied).
std::string emit_per_kernel_decode_unit(const ProgramPlan& plan,
                                        const TaskBodyOptions& bodies = {});

struct PerKernelDecodeOptions {
  // GPU only: the first step launched, then one step captured as a CUDA graph on the same device
  // buffers and replayed for every later step. UserError in emulation.
  bool cuda_graph = false;
  bool logits = false;  // copy LOGITS back after every step
};

struct PerKernelDecode {
  // The tokens (as decode_with's); with PerKernelDecodeOptions::logits each step's logits;
  // run.seconds: every step's time (host wall time around its launch and wait).
  DecodeResult decode;
  int64_t launched_steps = 0, graph_steps = 0;  // steps run by launches / by graph replays
  double launched_seconds = 0, graph_seconds = 0;
  int64_t setup_bytes = 0;     // copied to the device once: every input, the decode state
  int64_t bytes_per_step = 0;  // device to host: the newest token id (and LOGITS when asked)
};

class PerKernelDecoder {
 public:
  // Emits and builds the unit for `plan` (lowered for a GPU target): host emulation, or nvcc for
  // the plan's target. UserError when the plan does not follow the decode interface, a body does
  // not fit, or the build fails.
  PerKernelDecoder(const ProgramPlan& plan, bool emulated, const TaskBodyOptions& bodies = {},
                   const BuildOptions& build = {});
  ~PerKernelDecoder();

  const std::string& unit() const { return program_->source(); }
  bool emulated() const { return emulated_; }

  // Decodes `options.tokens` steps: weights and state placed once (place_decode, as the
  // persistent kernel's resident decode), then one step per token. The same tokens as
  // MegakernelProgram::decode and decode_with on the same plan and options.
  PerKernelDecode decode(const DecodeOptions& options, const PerKernelDecodeOptions& o) const;

 private:
  ProgramPlan plan_;
  bool emulated_ = true;
  std::unique_ptr<Program> program_;
};

}  // namespace weft
