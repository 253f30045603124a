// Driver: a program's task graph run as library calls (docs/mpk.md): on host threads, or as one
// persistent kernel in host emulation or on a GPU, each checked against its reference (the
// kernels one after another; the per-kernel CUDA path), and a decode-step program decoded with its
// loop on the device, against the same bodies launched one by one. Structured results, traces as
// Chrome/Perfetto JSON; printing is the caller's.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "driver/mpk_program.h"
#include "mpk/encode.h"
#include "mpk/runtime/decode_data.h"
#include "mpk/runtime/megakernel_program.h"
#include "mpk/runtime/per_kernel_decode.h"
#include "runtime/cpu_program.h"

namespace weft {

// Seeded uniform values in [-1, 1) for every input of `plan`, in order (the inputs `weft mpk run`
// and `weft mpk bench` use).
std::vector<std::vector<float>> seeded_megakernel_inputs(const ProgramPlan& plan);

struct MpkRunOptions {
  uint64_t iterations = 1;  // host: iterations of the task graph; emulation, gpu: 1 launch of 1
  uint64_t delay_seed = 0;  // host: nonzero injects seeded random delays
  bool trace = false;       // every task's span (host: every iteration; else the launch)
  std::vector<std::vector<float>> inputs;  // plan input order; empty: seeded_megakernel_inputs
};

struct MpkRunReport {
  std::vector<std::vector<float>> outputs;  // the task graph's, plan output order
  // Identical to the reference's: the kernels one after another on the calling thread (host), the
  // per-kernel CUDA path (emulation, gpu).
  bool same = false;
  double seconds = 0;       // host: every iteration; else the launch
  std::string trace_json;   // with MpkRunOptions::trace
  size_t traced_tasks = 0;  // task runs in the trace
};

struct MpkDecodeOptions {
  DecodeOptions decode;
  int tokens_per_launch = 1;  // decode steps per launch
  bool logits = false;        // copy back and compare each launch's last logits
  bool trace = false;         // every task of every launch
  // Also decode on the per-kernel loop on the device (on a GPU also as a CUDA graph): the same
  // bodies launched one by one, the comparison.
  bool per_kernel = true;
  // The per-kernel path's decode with the host hooks (testing/decode_demo.h), when the caller
  // has one: the reference the others are compared with.
  const DecodeResult* host_reference = nullptr;
  std::function<void(int64_t decoded)> after_launch = nullptr;  // progress: steps decoded so far
};

struct MpkDecodeReport {
  ResidentDecode resident;  // the persistent kernel's decode
  // "per-kernel launches" and, on a GPU with more than one token, "per-kernel CUDA graph".
  std::vector<std::pair<std::string, PerKernelDecode>> per_kernel;
  // Whether the tokens (and with logits the logits) agree with the reference: host_reference,
  // else the per-kernel launches; nullopt with neither.
  std::optional<bool> same;
  std::string trace_json;  // with MpkDecodeOptions::trace: every launch
};

// A program's task graph, compiled on construction and built on first use (the CPU program, or
// the persistent kernel: nvcc, or the host compiler in emulation, which takes minutes, once however
// many threads ask), then run any number of times.
class MegakernelRunner {
 public:
  // UserError as compile_task_graph.
  explicit MegakernelRunner(MpkProgram program);
  ~MegakernelRunner();

  const MpkProgram& program() const { return p_; }
  const MpkCompiled& compiled() const { return compiled_; }
  const DeviceGraph& device_graph() const { return graph_; }

  // emulation, gpu: the persistent kernel (built on first call; UserError when a body does not fit
  // a worker or the build fails).
  const MegakernelProgram& megakernel() const;
  // host: the CPU program whose block functions are the task bodies (built on first call).
  const CpuProgram& cpu_program() const;

  // Runs the task graph and its reference on the options' inputs. UserError for a program built
  // with the decode loop (use decode), or when the runtime trips its watchdog.
  MpkRunReport run(const MpkRunOptions& options) const;
  // emulation, gpu, built with decode_loop: decodes with the loop on the device.
  MpkDecodeReport decode(const MpkDecodeOptions& options) const;

 private:
  MpkProgram p_;
  MpkCompiled compiled_;
  DeviceGraph graph_;
  mutable std::mutex build_mutex_;
  mutable std::unique_ptr<MegakernelProgram> megakernel_;
  mutable std::unique_ptr<CpuProgram> cpu_program_;
};

}  // namespace weft
