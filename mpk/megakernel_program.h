// A lowered plan run as one persistent kernel: its task graph (mpk/compile.h), its task bodies
// (codegen/cuda/emit_task_bodies.h) and the unit around them (mpk/megakernel.h), built and run in
// host emulation or on a GPU. Inputs and outputs are f32 host vectors in plan order, stored in
// the plan's dtypes as the per-kernel backends store them, so results compare bit for bit.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codegen/cuda/emit_task_bodies.h"
#include "lower/plan.h"
#include "mpk/compile.h"
#include "mpk/megakernel.h"
#include "mpk/megakernel_run.h"

namespace weft {

struct MegakernelProgramOptions {
  MpkOptions mpk;            // workers, dispatch, data-dependent kernels
  MegakernelOptions kernel;  // schedulers, watchdog
  TaskBodyOptions bodies;    // worker threads, shared-memory budget
  bool emulated = true;      // host emulation; false: nvcc for `arch`, run on the GPU
  std::string arch = "sm_90a";
};

struct MegakernelResult {
  std::vector<std::vector<float>> outputs;  // plan output order
  MegakernelRun run;                        // ok / the watchdog's report, trace, seconds
};

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

  // Runs the task graph `iterations` times on `inputs` (outputs and workspace start as 0xff
  // bytes, NaN in every dtype, so an element no task writes shows up).
  MegakernelResult run(const std::vector<std::vector<float>>& inputs, uint64_t iterations = 1,
                       bool trace = false) const;
  // `warmup` untimed and `reps` timed launches of `iterations` iterations on `inputs`, placed
  // once (on a GPU: device-resident, each launch between CUDA events; LoadedMegakernel::time).
  // UserError when a launch trips the watchdog.
  Timing time(const std::vector<std::vector<float>>& inputs, uint64_t iterations, int warmup,
              int reps) const;

 private:
  ProgramPlan plan_;
  MpkCompiled compiled_;
  TaskBodyFit fit_;
  std::string unit_;
  std::unique_ptr<LoadedMegakernel> kernel_;
};

}  // namespace weft
