// One interface for a compiled program on every backend: load it (generate its code, build it
// cached, load the library), run it on host tensors, time it. The backend is an enum, and one
// factory picks the implementation from it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/target.h"
#include "ir/graph.h"
#include "lower/plan.h"
#include "runtime/build_cache.h"
#include "runtime/timing.h"

namespace weft {

enum class Backend : uint8_t {
  cpu,             // C++ from codegen/cpu, built with the host compiler (runtime/cpu_program.h)
  cuda,            // CUDA from codegen/cuda, built with nvcc, run on the GPU (cuda_runtime.h)
  cuda_emulation,  // the same CUDA built as host C++ with -DWEFT_HOST_EMULATION
                   // (emulated_program.h)
};

// "cpu", "cuda", "cuda-emulation".
std::string_view backend_name(Backend backend);
std::optional<Backend> backend_by_name(std::string_view name);
const std::vector<Backend>& all_backends();
// The kind of target a backend's plans are lowered for: cpu runs CPU plans, the others GPU plans.
TargetKind backend_target_kind(Backend backend);

// Throws UserError when `backend` cannot run here (cuda: no device, or weft built without CUDA),
// so a caller can fail before compiling anything.
void require_backend(Backend backend);

// The target `backend` lowers for: cpu's, the named GPU target, or by default the device's
// (cuda; throws UserError when there is no device, before anything is compiled) or h100
// (cuda-emulation).
const Target& backend_target(Backend backend, const std::string& target_name);

struct CpuBuildOptions {
  std::string compiler = "c++";
  // -fopenmp-simd honours the `omp simd` hints of the generated loops without an OpenMP runtime.
  std::string flags = "-std=c++17 -O3 -march=native -shared -fPIC -fopenmp-simd";
};

struct CudaBuildOptions {
  std::string nvcc;  // empty: $WEFT_NVCC, /usr/local/cuda/bin/nvcc, nvcc on PATH
  std::string arch;  // empty: the plan target's arch (h100/h200: sm_90a, a100: sm_80)
  // `-cudart shared`: the library and weft then share one CUDA runtime (streams, pointers).
  std::string flags = "-O3 -std=c++17 -shared -Xcompiler -fPIC -cudart shared";
  std::string libraries = "-lcublas -lcublasLt";
};

struct EmulationBuildOptions {
  std::string compiler = "g++";
  std::string flags = "-std=c++20 -O1 -x c++ -DWEFT_HOST_EMULATION -shared -fPIC -pthread";
};

// How every backend builds: one cache directory, and each backend's compiler and flags.
struct BuildOptions {
  std::string cache_dir;  // empty: default_cache_directory's rules (runtime/build_cache.h)
  CpuBuildOptions cpu;
  CudaBuildOptions cuda;
  EmulationBuildOptions emulation;
};

// A program built for one backend and loaded into this process. Not reentrant: one run or time
// call at a time per program (buffers are reused between calls).
class Program {
 public:
  virtual ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  Backend backend() const { return backend_; }
  const ProgramPlan& plan() const { return plan_; }
  const std::string& source() const { return source_; }      // the generated code
  const std::string& artifact() const { return artifact_; }  // the loaded shared library
  bool from_cache() const { return from_cache_; }            // no compiler ran

  // Runs once. inputs[i] holds numel floats of the plan's input i (row-major, plan order); GPU
  // backends store them in the tensor's plan dtype (rounding to nearest even). Returns the outputs
  // as floats in plan order. Throws UserError for a wrong number or size of inputs.
  std::vector<std::vector<float>> run(const std::vector<std::vector<float>>& inputs) const;
  // `warmup` untimed runs, then `reps` timed ones (median, min, max in seconds) on the same
  // inputs, converted and placed once: cpu times weft_main on the host buffers, cuda each launch
  // between two CUDA events on device-resident buffers, cuda-emulation the emulated launch (host
  // time, no measure of GPU speed). Same errors as run; reps >= 1 and warmup >= 0.
  Timing time(const std::vector<std::vector<float>>& inputs, int warmup, int reps) const;
  // The raw ABI (docs/cuda-backend.md), for callers that keep tensors on the device (the model
  // executor, exec/device_vm.h): one launch of weft_cuda_launch on caller-owned buffers (device
  // pointers in plan order, each in its plan dtype; `workspace` of plan().workspace_bytes) on
  // `stream` (a cudaStream_t; ignored in emulation), with no copy and no synchronization. A
  // failed launch is reported as run reports it. UserError on the cpu backend.
  void launch_raw(void* const* inputs, void* const* outputs, void* workspace, void* stream) const;

 protected:
  Program(Backend backend, const ProgramPlan& plan, std::string source);
  // Takes the artifact `built` made (which must not have failed) and loads it; throws UserError
  // when the loader refuses it (a missing library of the environment, for instance).
  void load(const CacheResult& built);
  // The address of `name` in the loaded library, or nullptr.
  void* symbol(const char* name) const;

 private:
  virtual std::vector<std::vector<float>> run_checked(
      const std::vector<std::vector<float>>& inputs) const = 0;
  virtual Timing time_checked(const std::vector<std::vector<float>>& inputs, int warmup,
                              int reps) const = 0;
  void check_inputs(const std::vector<std::vector<float>>& inputs) const;
  virtual void launch_raw_checked(void* const* inputs, void* const* outputs, void* workspace,
                                  void* stream) const;

  Backend backend_;
  ProgramPlan plan_;
  std::string source_, artifact_;
  bool from_cache_ = false;
  void* handle_ = nullptr;
};

// The code `backend` runs for `plan` (lowered for a target of backend_target_kind(backend)):
// C++ from codegen/cpu for cpu, CUDA from codegen/cuda for cuda and cuda-emulation.
std::string generate_source(const ProgramPlan& plan, Backend backend);
// The file extension of that code: ".cpp" or ".cu".
std::string_view source_extension(Backend backend);

// Builds `source` (generate_source's, or an edited copy of it) for `plan` with the backend's
// compiler, or finds it in the cache, and loads it. Throws UserError when the plan's target is
// not of backend_target_kind(backend), when weft was built without the CUDA toolkit (cuda), or
// nvcc is missing or fails (cuda: user code of the toolkit's environment); a host compiler
// failure is an internal error (generated code must compile). Building for cuda needs the
// toolkit, not a device: running needs one.
std::unique_ptr<Program> build_program(const ProgramPlan& plan, Backend backend,
                                       const std::string& source, const BuildOptions& options = {});
// generate_source, then build_program.
std::unique_ptr<Program> load_program(const ProgramPlan& plan, Backend backend,
                                      const BuildOptions& options = {});
// Lowers `graph` for `target` (lower/pipeline.h) and loads the plan as above; UserError when the
// target is not of backend_target_kind(backend).
std::unique_ptr<Program> compile_program(const Graph& graph, const Target& target, Backend backend,
                                         const BuildOptions& options = {});

}  // namespace weft
