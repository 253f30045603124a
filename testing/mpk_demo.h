// The decode comparisons `weft mpk run` shows with the host hooks (testing/decode_demo.h): a
// decode-step program decoded through the host task-graph runtime against its kernels one after
// another, or one persistent-kernel launch per token against the per-kernel path, and the dump of
// a decode for an independent reference (tests/python/test_mpk_qwen3.py).
#pragma once

#include <string>

#include "driver/mpk_run.h"
#include "mpk/runtime/decode_data.h"

namespace weft {

struct DecodeComparison {
  DecodeResult got;         // the task graph's (host runtime, or persistent-kernel launches)
  DecodeResult want;        // the reference's (sequential kernels, or the per-kernel path)
  double seconds = 0;       // got's steps (host runtime: the whole run)
  std::string trace_json;   // with trace: every task (host runtime) or the last launch's
  size_t traced_tasks = 0;  // task runs in the trace
  bool same() const { return got.tokens == want.tokens && got.logits == want.logits; }
};

// Host runner: the task graph on host threads (`schedulers` and `delay_seed` as MpkRunOptions)
// against the kernels one after another. options.declared defaults to the program's input dtypes.
DecodeComparison decode_on_host_runtime(const MegakernelRunner& runner, DecodeOptions options,
                                        uint64_t delay_seed, bool trace);

// Emulation or gpu runner without the decode loop: one launch per token with the host hooks
// between launches, against the per-kernel path driven the same way.
DecodeComparison decode_with_launches(const MegakernelRunner& runner, const DecodeOptions& options,
                                      bool trace);

// The per-kernel path (cuda or cuda-emulation backend) driven by the host hooks: the reference of
// MpkDecodeOptions::host_reference (every input copied each step: slow at a real size).
DecodeResult decode_per_kernel_with_host_hooks(const MpkProgram& program,
                                               const DecodeOptions& options);

// DIR/weights.npz (every weight as filled, f32 values) and DIR/decode.npz (tokens, per-step
// logits, RoPE theta). `result` must hold the weights (DecodeOptions::keep_weights).
void write_decode_dump(const std::string& dir, const DecodeOptions& options,
                       const DecodeResult& result);

}  // namespace weft
