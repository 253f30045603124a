// A device the model executor keeps its tensors on (exec/device_vm.h), behind one small
// interface: memory, one stream, copies, the model kernel library (codegen/cuda/
// emit_model_kernels.h) built and loaded for it, and CUDA-graph capture. Two implementations:
// cuda (cudaMalloc, a CUDA stream and graphs; needs a GPU) and cuda_emulation (host memory, the
// kernels built as host C++, launches run at once; on request it also emulates graph capture:
// work issued while capturing is recorded, run at each replay, and a buffer freed while a graph
// still needs it is an internal error, which on a GPU nothing would report).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "runtime/program.h"
#include "runtime/timing.h"

namespace weft {

// A captured launch sequence, replayed on the device's stream (cuda: a CUDA graph; emulation:
// the recorded host calls).
class CapturedGraph {
 public:
  virtual ~CapturedGraph();
};

class Device {
 public:
  virtual ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  Backend backend() const { return backend_; }

  // `bytes` of device memory (at least 1), 256-byte aligned; UserError when it runs out.
  virtual void* allocate(int64_t bytes) = 0;
  virtual void deallocate(void* p) = 0;
  // Copies on the device's stream; download waits for the stream to finish first.
  virtual void upload(void* dst, const void* src, int64_t bytes) = 0;
  virtual void download(void* dst, const void* src, int64_t bytes) = 0;
  // A device-to-device copy on the stream (no wait).
  virtual void copy(void* dst, const void* src, int64_t bytes) = 0;
  virtual void* stream() const = 0;
  virtual void synchronize() = 0;

  // The address of a launch entry of the model kernel library (weft_dk_map_launch, ...); an
  // internal error when it is missing. Each takes (const ARGS*, stream) and returns 0 or a
  // cudaError_t.
  void* kernel(const char* name) const;
  // Calls kernel `name` on `args`, its argument struct of `args_bytes` (copied where a capture
  // records the launch, as a CUDA graph keeps a kernel's parameters); an error code from it is
  // reported (UserError for the environment's errors, else internal).
  void launch(const char* name, const void* args, size_t args_bytes);
  // Calls `work`, host code that enqueues launches on the stream it is given (a µGraph unit's
  // raw launch): now, or, on an emulated device that is capturing, at each replay (on cuda, stream
  // capture records what it enqueues).
  virtual void enqueue(std::function<void(void* stream)> work) { work(stream()); }

  // Whether launches can be captured as a graph (cuda; emulation when opened to emulate it).
  virtual bool captures_graphs() const { return false; }
  // Begins capturing the stream's launches; end_capture returns the instantiated graph. Buffers
  // allocated while capturing belong to the graph: they must outlive it.
  virtual void begin_capture();
  virtual std::unique_ptr<CapturedGraph> end_capture();
  // Abandons a capture after an error (no graph).
  virtual void abort_capture();
  virtual void replay(const CapturedGraph& graph);

  // `warmup` untimed then `reps` timed calls of `work`: on cuda each between two CUDA events on
  // the stream (device time of what `work` enqueues), in emulation on the host's steady clock.
  virtual Timing time_on_stream(const std::function<void()>& work, int warmup, int reps);
  // Whether time_on_stream measures the device (cuda) or the host running emulated code.
  virtual bool times_the_device() const { return false; }

 protected:
  Device(Backend backend, const BuildOptions& options);
  // Builds model_kernels_source() for the backend (cached) and loads it; called by the
  // implementations' constructors.
  void load_kernels();
  // Throws the right error for `rc` (a cudaError_t) from `what`.
  virtual void check_launch(int rc, const std::string& what) const = 0;
  // Whether enqueue records work instead of running it (an emulated capture).
  virtual bool records_work() const { return false; }
  BuildOptions options_;

 private:
  Backend backend_;
  void* library_ = nullptr;
};

// The device of `backend` (cuda or cuda_emulation; UserError for cpu, or for cuda without a
// usable GPU or toolkit). `emulate_graph_capture`: the emulated device captures and replays
// graphs as cuda does (a check of the capture logic without a GPU; ignored on cuda).
std::unique_ptr<Device> open_device(Backend backend, const BuildOptions& options = {},
                                    bool emulate_graph_capture = false);

// A buffer on a device, freed when the last owner drops it.
struct DeviceBuffer {
  Device* device = nullptr;
  void* data = nullptr;
  int64_t bytes = 0;
  DeviceBuffer(Device& d, int64_t n) : device(&d), data(d.allocate(n)), bytes(n) {}
  ~DeviceBuffer() { device->deallocate(data); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

}  // namespace weft
