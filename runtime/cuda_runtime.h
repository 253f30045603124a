// CUDA runtime API: build generated CUDA with nvcc (cached by content hash), load it, run and time
// it on the GPU. Building needs only the toolkit; running needs a device.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/target.h"
#include "interp/tensor.h"
#include "ir/graph.h"
#include "lower/plan.h"
#include "runtime/timing.h"

namespace weft {

struct CudaCompileOptions {
  std::string cache_dir;  // empty: the CPU runtime's cache directory (runtime/build_cache.h)
  std::string nvcc;       // empty: $WEFT_NVCC, /usr/local/cuda/bin/nvcc, nvcc on PATH
  std::string arch;       // empty: the plan target's arch (h100/h200: sm_90a, a100: sm_80)
  // `-cudart shared`: the library and weft then share one CUDA runtime (streams, pointers).
  std::string flags = "-O3 -std=c++17 -shared -Xcompiler -fPIC -cudart shared";
  std::string libraries = "-lcublas -lcublasLt";
};

// True when this weft was built with the CUDA toolkit (WEFT_HAVE_CUDA).
bool cuda_runtime_built();

// The nvcc `options` select; throws UserError when there is none.
std::string find_nvcc(const CudaCompileOptions& options = {});

struct CudaDevice {
  int ordinal = 0;
  std::string name;                // "NVIDIA H100 80GB HBM3"
  int major = 0, minor = 0;        // compute capability
  int64_t max_smem_per_block = 0;  // cudaDevAttrMaxSharedMemoryPerBlockOptin
  int driver_version = 0;          // cudaDriverGetVersion: 1000 * major + 10 * minor
  int runtime_version = 0;
};

// The current device. Throws UserError when weft was built without CUDA, the driver is missing
// or no device is visible (with cudaGetDeviceCount's error string).
const CudaDevice& require_cuda_device();
// Empty when a device is usable, else the reason require_cuda_device would throw.
std::string cuda_unavailable_reason();
// The built-in GPU target matching the device's name (H100, H200, A100), else h100.
const Target& target_for_device(const CudaDevice& device);

// A program built by nvcc and loaded into this process. Device buffers are allocated on first use
// and kept; one call at a time (not reentrant).
class CudaProgram {
 public:
  ~CudaProgram();
  CudaProgram(const CudaProgram&) = delete;
  CudaProgram& operator=(const CudaProgram&) = delete;

  const ProgramPlan& plan() const { return plan_; }
  const std::string& source() const { return source_; }
  const std::string& artifact() const { return artifact_; }  // the shared library's path
  bool from_cache() const { return from_cache_; }            // nvcc did not run
  std::string plan_name() const;                             // weft_cuda_plan_name()

  // Runs once: inputs[i] holds numel floats of input i (row-major, plan order), converted to the
  // tensor's dtype on the device; outputs come back converted to float. Throws UserError on wrong
  // sizes, no device, or a kernel asking for more shared memory than the device allows.
  std::vector<std::vector<float>> run(const std::vector<std::vector<float>>& inputs) const;
  // Uploads `inputs` once, then `warmup` untimed and `reps` timed launches, each between two
  // CUDA events on the program's stream; reports the median (seconds).
  Timing time(const std::vector<std::vector<float>>& inputs, int warmup, int reps) const;

 private:
  friend std::unique_ptr<CudaProgram> compile_cuda_source(const ProgramPlan&, const std::string&,
                                                          const CudaCompileOptions&);
  struct DeviceState;
  CudaProgram() = default;
  DeviceState& device_state() const;  // allocates buffers and checks limits on first use
  void upload(const std::vector<std::vector<float>>& inputs) const;
  void launch() const;

  ProgramPlan plan_;
  std::string source_, artifact_;
  bool from_cache_ = false;
  void* handle_ = nullptr;
  void* launch_ = nullptr;
  void* name_ = nullptr;
  mutable std::unique_ptr<DeviceState> state_;
};

// Builds `source` (a .cu with the weft_cuda_launch ABI, docs/cuda-backend.md) for `plan` with
// nvcc, or finds it in the cache, and loads it. No device is needed. Throws UserError when nvcc
// is missing or fails (with its output) or weft was built without CUDA.
std::unique_ptr<CudaProgram> compile_cuda_source(const ProgramPlan& plan, const std::string& source,
                                                 const CudaCompileOptions& options = {});
// Emits CUDA for a lowered GPU plan (codegen/cuda) and builds it as above.
std::unique_ptr<CudaProgram> compile_cuda_plan(const ProgramPlan& plan,
                                               const CudaCompileOptions& options = {});
// Lowers `graph` for the GPU `target` and builds it.
std::unique_ptr<CudaProgram> compile_cuda_program(const Graph& graph, const Target& target,
                                                  const CudaCompileOptions& options = {});

// Compiles `graph` for `target` (empty: the device's) and runs it on the GPU: the interpreter's
// calling convention, for `weft run --backend cuda`.
std::vector<Tensor<double>> run_on_cuda(const Graph& graph,
                                        const std::vector<Tensor<double>>& inputs,
                                        const std::string& target = "");

}  // namespace weft
