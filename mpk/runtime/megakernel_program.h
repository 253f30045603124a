// A lowered plan run as one persistent kernel: its task graph (mpk/passes/pipeline.h), its task
// bodies (codegen/cuda/emit_task_bodies.h) and the unit around them (mpk/runtime/megakernel.h),
// built and run in host emulation or on a GPU. Inputs and outputs are f32 host vectors in plan
// order, stored in the plan's dtypes as the per-kernel backends store them, so results compare bit
// for bit.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "codegen/cuda/emit_task_bodies.h"
#include "lower/plan.h"
#include "mpk/passes/pipeline.h"
#include "mpk/runtime/decode_data.h"
#include "mpk/runtime/megakernel.h"
#include "mpk/runtime/megakernel_run.h"
#include "mpk/runtime/resident_plan.h"
#include "mpk/runtime/trace.h"

namespace weft {

struct MegakernelProgramOptions {
  MpkOptions mpk;            // workers, dispatch, data-dependent kernels
  MegakernelOptions kernel;  // schedulers, watchdog
  TaskBodyOptions bodies;    // worker threads, shared-memory budget
  bool emulated = true;      // host emulation; false: nvcc for `arch`, run on the GPU
  std::string arch = "sm_90a";
};

// A decode loop with its state on the device (options.mpk.decode_on_device).
struct ResidentDecodeOptions {
  int tokens_per_launch = 1;  // decode steps per launch (iterations of the step's task graph)
  bool logits = false;        // copy LOGITS back after each launch (its last step's)
  bool trace = false;         // record every task of every launch (ResidentDecode::traces)
  std::function<void(int64_t decoded)> after_launch = nullptr;  // progress: steps decoded so far
};
struct ResidentDecode {
  // The tokens (as decode_with's); with ResidentDecodeOptions::logits one logits vector per
  // launch; run.seconds: the launches' time (host wall time around each launch and its wait).
  DecodeResult decode;
  int64_t launches = 0;
  int64_t setup_bytes = 0;  // copied to the device once: every input, the decode state
  // Copied per launch, device to host: the newest token id (and LOGITS when asked); nothing is
  // copied to the device between launches.
  int64_t bytes_per_launch = 0;
  // With ResidentDecodeOptions::trace, one per launch in order: launch l ran steps first_step ..
  // first_step + iterations - 1 (step s decodes position s), its spans indexed (iteration - 1) *
  // tasks + task. Not counted in bytes_per_launch.
  std::vector<LaunchTrace> traces;
};

struct MegakernelResult {
  std::vector<std::vector<float>> outputs;  // plan output order
  MegakernelRun run;                        // ok / the watchdog's report, trace, seconds
};

// The unit a MegakernelProgram builds (prelude, task bodies, protocol, platform, entry points),
// with the bodies' fit and the task graph; UserError as for MegakernelProgram.
struct MegakernelUnit {
  std::string unit;
  TaskBodyFit fit;
  MpkCompiled compiled;
};
MegakernelUnit emit_megakernel_program_unit(const ProgramPlan& plan,
                                            const MegakernelProgramOptions& options);

class MegakernelProgram {
 public:
  // Compiles the task graph and the unit and loads it. `plan` must be lowered for a GPU target.
  // UserError when a body does not fit a worker, when nvcc fails, or when a launch is refused.
  MegakernelProgram(const ProgramPlan& plan, const MegakernelProgramOptions& options);
  ~MegakernelProgram();

  const ProgramPlan& plan() const { return plan_; }
  const MpkCompiled& compiled() const { return compiled_; }
  const TaskBodyFit& fit() const { return fit_; }
  const std::string& unit() const { return unit_; }

  // run and time: UserError for a program built with the decode tasks (use decode).
  // Runs the task graph `iterations` times on `inputs` (outputs and workspace start as 0xff
  // bytes, NaN in every dtype, so an element no task writes shows up).
  MegakernelResult run(const std::vector<std::vector<float>>& inputs, uint64_t iterations = 1,
                       bool trace = false) const;
  // `warmup` untimed and `reps` timed launches of `iterations` iterations on `inputs`, placed
  // once (on a GPU: device-resident, each launch between CUDA events; LoadedMegakernel::time).
  // UserError when a launch trips the watchdog.
  Timing time(const std::vector<std::vector<float>>& inputs, uint64_t iterations, int warmup,
              int reps) const;
  // Decodes `options.tokens` steps with the decode loop on the device: every input (weights
  // included) and the decode state placed once, then launches of tokens_per_launch steps each,
  // the device's tasks embedding the token, computing the rotary tables, appending to the caches
  // and choosing the next token (mpk/decode_layout.h). The program must be built with
  // options.mpk.decode_on_device. The same tokens as decode_with on the same plan and options.
  ResidentDecode decode(const DecodeOptions& options, const ResidentDecodeOptions& resident) const;
  // Bytes of the workspace a launch needs (the plan's temps, and the decode state when resident).
  int64_t workspace_bytes() const;
  // `inputs` placed once for launches one after another with the state left where it is (a model's
  // decode step with its KV cache: driver/model_decode.h). UserError for a program built with the
  // decode tasks, or as ResidentPlanRun.
  std::unique_ptr<ResidentPlanRun> resident(const std::vector<std::vector<float>>& inputs) const;

 private:
  ProgramPlan plan_;
  MpkCompiled compiled_;
  TaskBodyFit fit_;
  std::string unit_;
  std::unique_ptr<LoadedMegakernel> kernel_;
  bool decode_on_device_ = false;
};

}  // namespace weft
