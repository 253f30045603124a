// The CUDA backend's program and the device it runs on: build generated CUDA with nvcc (cached by
// content hash), load it, run and time it on the GPU. Building needs only the toolkit; running
// needs a device.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/target.h"
#include "lower/plan.h"
#include "runtime/device.h"
#include "runtime/program.h"

namespace weft {

// True when this weft was built with the CUDA toolkit (WEFT_HAVE_CUDA).
bool cuda_runtime_built();

// The nvcc `options` select; throws UserError when there is none.
std::string find_nvcc(const CudaBuildOptions& options = {});

struct CudaDevice {
  int ordinal = 0;
  std::string name;                // "NVIDIA H100 80GB HBM3"
  int major = 0, minor = 0;        // compute capability
  int sms = 0;                     // streaming multiprocessors
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
// and kept. run and time (Program) throw UserError when there is no device, the device's
// architecture is not the plan's, or a kernel asks for more shared memory than it allows;
// run converts inputs to their plan dtypes on the device and outputs back to float.
class CudaProgram final : public Program {
 public:
  ~CudaProgram() override;
  std::string plan_name() const;  // weft_cuda_plan_name()

 private:
  friend std::unique_ptr<CudaProgram> build_cuda_program(const ProgramPlan&, const std::string&,
                                                         const BuildOptions&);
  struct DeviceState;
  CudaProgram(const ProgramPlan& plan, std::string source);
  DeviceState& device_state() const;  // allocates buffers and checks limits on first use
  void upload(const std::vector<std::vector<float>>& inputs) const;
  void launch() const;
  void launch_raw_checked(void* const* inputs, void* const* outputs, void* workspace,
                          void* stream) const override;
  std::vector<std::vector<float>> run_checked(
      const std::vector<std::vector<float>>& inputs) const override;
  // Uploads `inputs` once, then `warmup` untimed and `reps` timed launches, each between two
  // CUDA events on the program's stream.
  Timing time_checked(const std::vector<std::vector<float>>& inputs, int warmup,
                      int reps) const override;

  void* launch_ = nullptr;
  void* name_ = nullptr;
  mutable std::unique_ptr<DeviceState> state_;

  friend Timing time_cuda_graph(const Program&, const std::vector<std::vector<float>>&, int, int);
};

// The program's launch sequence captured once as a CUDA graph (after one ordinary launch, so
// lazily created library handles exist before the capture), then `warmup` untimed and `reps`
// timed graph launches between CUDA events on the program's stream: the per-kernel path without
// the host's per-kernel launch cost. UserError unless `program` is a cuda-backend program, when
// there is no device, or when the capture fails (with the runtime's error).
Timing time_cuda_graph(const Program& program, const std::vector<std::vector<float>>& inputs,
                       int warmup, int reps);

// The device's copy bandwidth in bytes per second: a device-to-device cudaMemcpy of `bytes`
// timed between CUDA events (median of `reps`), counting every byte read and written.
// UserError when there is no device.
double measure_copy_bandwidth(int64_t bytes = int64_t{1} << 30, int reps = 5);

// The GPU as a Device (runtime/device.h): cudaMalloc'd buffers, one non-blocking stream, the
// model kernels built for the device's architecture, stream capture into CUDA graphs. UserError
// without a usable device or toolkit.
std::unique_ptr<Device> open_cuda_device(const BuildOptions& options = {});

// Builds a .cu unit into a shared library for `arch` (sm_90a, ...) with nvcc (options.cuda), or
// finds it in the cache (the result says whether the compiler failed, with its log). UserError
// when nvcc is missing or weft was built without CUDA.
CacheResult build_cuda_library(const std::string& source, const std::string& arch,
                               const BuildOptions& options = {});

// Builds `source` (a .cu with the weft_cuda_launch ABI, docs/cuda-backend.md) for `plan` with
// nvcc (options.cuda), or finds it in the cache, and loads it. No device is needed. Throws
// UserError when the plan is not for a GPU target (and options.cuda.arch is empty), nvcc is
// missing or fails (with its output) or weft was built without CUDA.
std::unique_ptr<CudaProgram> build_cuda_program(const ProgramPlan& plan, const std::string& source,
                                                const BuildOptions& options = {});

}  // namespace weft
