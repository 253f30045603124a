// Driver: a function of a compiled model directory as one persistent kernel (docs/mpk.md, "Whole
// models"): traced once on the device executor at the arguments' binding, its launches turned
// into one kernel plan (driver/model_megakernel_plan.h) whose task graph the mega-kernel compiles
// and runs, in host emulation or on a GPU. Structured results; printing is the caller's (`weft run
// DIR --megakernel`, the tests).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "driver/compiled_dir.h"
#include "driver/mpk_program.h"

namespace weft {

struct ModelMegakernelOptions {
  std::string function = "main";  // the directory's function (the overload with a DeviceVm: unread)
  MpkPlatform platform = MpkPlatform::emulation;  // emulation or gpu
  int workers = 0;                                // 0: default_megakernel_workers
  Dispatch dispatch = Dispatch::hybrid;
};

struct ModelMegakernel {
  MpkProgram program;  // the plan and the options its task graph is built with
  // Per plan output, the result's name as exec/run_io.h's result_arrays gives it ("result",
  // "result.0", ...).
  std::vector<std::string> result_keys;
  std::vector<Shape> result_shapes;
  int64_t model_kernel_launches = 0;  // of the trace: model kernels and µGraph units
  int64_t ugraph_launches = 0;
  double trace_seconds = 0;  // the traced run and the plan built from it
  bool stored = false;       // the plan came from DIR/megakernel (write_dir_megakernels)
};

// Traces `function` of the executor's module at `args` (on the executor's device: cuda-emulation
// for the emulation platform, cuda for gpu) and builds the program of its persistent kernel.
// UserError when an operator runs on the host at this binding, or for an integer result.
ModelMegakernel model_megakernel(DeviceVm& vm, const std::string& function,
                                 const std::vector<DeviceValue>& args,
                                 const ModelMegakernelOptions& options);

// `weft compile MODEL --megakernel`: for each binding `dir` was compiled at (a fixed-shape model:
// its one shape), `function` traced in emulation on zero_arguments and its plan written to
// DIR/megakernel/FUNCTION.KEY.plan (KEY: the binding, "batch=1,seq=7"), with
// DIR/megakernel/index.json naming each plan's function, binding and results. Returns the plans'
// paths. UserError when the directory has neither bindings nor fixed shapes.
std::vector<std::string> write_dir_megakernels(CompiledModelDir& dir, const std::string& function);

// Traces `options.function` of `dir`'s compiled module at `args` (one per parameter, as
// CompiledModelDir::arguments gives them; weights included) on the device executor (emulation:
// cuda-emulation; gpu: cuda) and builds the program of its persistent kernel; a plan the
// directory stored for the arguments' binding (write_dir_megakernels) is used instead of a trace.
// UserError when an operator runs on the host at this binding, or for an integer result.
ModelMegakernel model_megakernel(CompiledModelDir& dir, const std::vector<VmValue>& args,
                                 const ModelMegakernelOptions& options);

// Per argument, the plan input its tensor is (nullopt for a tuple or an integer), as
// model_megakernel_inputs orders them.
std::vector<std::optional<size_t>> model_megakernel_input_of(const std::vector<VmValue>& args);

// The plan's inputs for `args` (plan input order, as MpkRunOptions::inputs takes them).
std::vector<std::vector<float>> model_megakernel_inputs(const ModelMegakernel& m,
                                                        const std::vector<VmValue>& args);

struct ModelMegakernelRun {
  std::map<std::string, Tensor<double>> results;  // as model_megakernel_results names them
  double seconds = 0;                             // the launch (emulation: host threads)
  int64_t workspace_bytes = 0;                    // the plan's
  int64_t unshared_bytes = 0;                     // the traced buffers' without reuse
};

// Builds `m`'s persistent kernel (emulation: the host compiler; gpu: nvcc) and runs it on `args`.
// `progress` hears, before the run, what was built (plan kernels, launches, tasks, events,
// workers, balance, times). UserError when its outputs differ from its kernels run one by one (a
// bug), or as MegakernelRunner.
ModelMegakernelRun run_model_megakernel(
    const CompiledModelDir& dir, const ModelMegakernel& m, const std::vector<VmValue>& args,
    const std::function<void(const std::string&)>& progress = nullptr);

struct ModelMegakernelTiming {
  Timing timing;        // launches of the persistent kernel (gpu: CUDA events; emulation: host)
  bool same = false;    // its outputs equal its kernels run one by one (checked first)
  int64_t tasks = 0;    // of the task graph
  int64_t workers = 0;  // worker CTAs
};

// `weft bench DIR --megakernel`: `m` built once, run once against its kernels one by one, then
// `warmup` untimed and `reps` timed launches on `args` placed once (MegakernelProgram::time).
ModelMegakernelTiming time_model_megakernel(const ModelMegakernel& m,
                                            const std::vector<VmValue>& args, int warmup, int reps);

// A run's outputs (plan output order) as `dir` names results (ONNX output names for an imported
// model).
std::map<std::string, Tensor<double>> model_megakernel_results(
    const CompiledModelDir& dir, const ModelMegakernel& m,
    const std::vector<std::vector<float>>& outputs);

}  // namespace weft
