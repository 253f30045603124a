// The device-resident model executor: runs the VM's register programs (exec/vm.h) with every
// tensor in a device buffer in its dtype (runtime/device.h: cudaMalloc on cuda, host memory on
// cuda-emulation). Arguments are uploaded once, only results come back; call_ugraph launches the
// µGraph's generated unit on the operands' buffers through the raw ABI, and table and model
// operators run as the model kernel library's kernels, chosen by the kernel family their row
// names (OpInfo::device; elementwise rows by their CUDA form). An operator without a device kernel
// runs on the host (operands downloaded, result uploaded) and is counted, never silently wrong. On
// cuda, a run at a shape binding is captured once as a CUDA graph and replayed by later runs at the
// same binding; every buffer the capture allocated lives as long as the graph
// (DeviceVmOptions::emulated_graphs checks that in emulation).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "exec/device_trace.h"
#include "exec/vm.h"
#include "runtime/device.h"

namespace weft {

// A tensor on the device: its buffer (shared: reshape, tuples and casts alias it), dtype and shape.
struct DeviceTensor {
  std::shared_ptr<DeviceBuffer> buffer;
  int64_t offset = 0;  // elements into the buffer
  DType dtype = DType::f32;
  Shape shape;
  void* data() const;  // the first element's address
};

struct DeviceValue;
using DeviceTuple = std::vector<DeviceValue>;
struct DeviceValue {
  std::variant<std::monostate, DeviceTensor, std::shared_ptr<const DeviceTuple>, int64_t> v;
  const DeviceTensor* tensor() const { return std::get_if<DeviceTensor>(&v); }
  const DeviceTuple* tuple() const;
};

struct DeviceVmStats {
  int64_t runs = 0;
  int64_t kernel_launches = 0;  // model-kernel launches (including those run at capture)
  int64_t ugraph_launches = 0;  // µGraph units launched through the raw ABI
  int64_t host_fallbacks = 0;   // operators run on the host (download, run, upload)
  std::map<std::string, int64_t> host_fallback_ops;  // by operator name
  int64_t graph_captures = 0;  // runs captured as a CUDA graph (cuda, or emulated_graphs)
  int64_t graph_replays = 0;   // runs served by replaying one
  int64_t uploaded_bytes = 0, downloaded_bytes = 0;
};

// Times of DeviceVm::time: on cuda replays of the binding's captured CUDA graph between CUDA
// events; in emulation (or a run that could not be captured) whole runs, or replays of the
// emulated graph with emulated_graphs.
struct DeviceTiming {
  Timing timing;
  bool graph_replays = false;  // each timed run was one replay of the captured graph
  bool device_clock = false;   // measured on the device (CUDA events), else the host's clock
};

struct DeviceVmOptions {
  BuildOptions build;
  std::string gpu_target;  // the target µGraphs are lowered for; empty: the device's, or h100
  // On cuda: capture each binding's run as a CUDA graph and replay it (false: launch each time).
  bool graphs = true;
  // On cuda-emulation: capture and replay as on cuda (runtime/device.h's emulated capture:
  // captured work runs only at replays, and freeing a buffer a live graph allocated is an internal
  // error), a check of the capture logic without a GPU; with graphs false it does nothing.
  bool emulated_graphs = false;
};

class DeviceVm {
 public:
  // Compiles `module` as Vm does and opens `backend`'s device (cuda or cuda_emulation).
  DeviceVm(const Module& module, Backend backend, DeviceVmOptions options = {});
  ~DeviceVm();
  DeviceVm(const DeviceVm&) = delete;
  DeviceVm& operator=(const DeviceVm&) = delete;

  Backend backend() const { return device_->backend(); }
  Device& device() { return *device_; }
  // A host value on the device (tensors stored in `type`'s dtypes, rounding to nearest even).
  DeviceValue upload(const VmValue& value, const MType& type);
  // A device value on the host (f64 arrays holding the dtype's values).
  VmValue download(const DeviceValue& value);
  // Runs function `name` on device arguments; the result stays on the device. Same errors as
  // Vm::run.
  DeviceValue run(const std::string& name, const std::vector<DeviceValue>& args);
  // Runs `name` on `args` once (capturing the binding on cuda), then `warmup` untimed and `reps`
  // timed runs: graph replays between CUDA events where the run was captured, else whole runs
  // (host clock in emulation). The result stays that of the runs (identical).
  DeviceTiming time(const std::string& name, const std::vector<DeviceValue>& args, int warmup,
                    int reps, DeviceValue* result = nullptr);
  // Runs `name` on `args` once, launching directly (no graph), and records the run: every buffer,
  // launch and host fallback (exec/device_trace.h). The trace keeps the buffers it names alive;
  // `result` receives the run's result. Index errors are reported as by run.
  DeviceTrace trace(const std::string& name, const std::vector<DeviceValue>& args,
                    DeviceValue* result = nullptr);
  // Uploads the arguments, runs, downloads the result.
  VmValue run_host(const std::string& name, const std::vector<VmValue>& args);
  const DeviceVmStats& stats() const { return stats_; }
  const Vm& vm() const { return vm_; }
  const DeviceVmOptions& options() const { return options_; }

 private:
  struct Frame;  // a call's frame of the register program (exec/register_program.h)
  // Thrown by a host fallback met while a run is captured: the run is not capturable.
  struct NotCapturable {};
  DeviceValue run_unchecked(const std::string& name, const std::vector<DeviceValue>& args);
  // The error flag's site number for an index check at `loc` (1-based; `what` is its message).
  int64_t index_site(const SourceLoc& loc, const std::string& what);
  // Reads the error flag back (a wait for the stream): an index out of range in the run just
  // finished is a UserError at its operator; the flag is cleared.
  void check_device_errors();
  DeviceValue call_function(const VmFunction& f, const std::vector<DeviceValue>& args, int depth);
  DeviceValue execute(const Binding& b, const std::vector<const DeviceValue*>& in,
                      const SymBinding& heap, int depth);
  // A table operator: its row's device kernel family (OpInfo::device) runs it, or the host.
  DeviceValue run_op(const Binding& b, const OpInfo& info,
                     const std::vector<const DeviceTensor*>& in, const SymBinding& heap);
  // One operator call as the kernel families see it: the binding and its row, the operands, the
  // evaluated attributes, and the result's shape and dtype.
  struct OpCall {
    const Binding& b;
    const OpInfo& info;
    const std::vector<const DeviceTensor*>& in;
    const Attrs& attrs;
    const Shape& out_shape;
    DType dtype;
    const SymBinding& heap;
  };
  DeviceValue elementwise_op(const OpCall& op);
  DeviceValue movement_op(const OpCall& op);
  DeviceValue parts_op(const OpCall& op);  // concat, split
  DeviceValue rows_op(const OpCall& op);
  DeviceValue gather_op(const OpCall& op);
  DeviceValue matmul_op(const OpCall& op);
  DeviceValue position_op(const OpCall& op);
  DeviceValue generate_op(const OpCall& op);
  DeviceValue window_op(const OpCall& op);
  DeviceValue host_fallback(const Binding& b, const std::vector<const DeviceTensor*>& in,
                            const SymBinding& heap);
  DeviceValue run_ugraph(const Binding& b, const std::vector<const DeviceTensor*>& in);
  const Program& ugraph_program(const Graph& g);
  // Every device buffer the executor allocates (kept for the graph while capturing).
  std::shared_ptr<DeviceBuffer> new_buffer(int64_t bytes);
  DeviceTensor allocate(DType dtype, const Shape& shape);
  // `t` in `dtype` (a copy through the map kernel when it differs).
  DeviceTensor converted(const DeviceTensor& t, DType dtype);
  // A model-kernel launch on its argument struct (`Args`: a weft_dk_*_args).
  template <class Args>
  void launch(const char* kernel, const Args& args) {
    device_->launch(kernel, &args, sizeof args);
    ++stats_.kernel_launches;
    if (trace_) record_launch(kernel, &args, sizeof args);
  }
  void record_launch(const char* kernel, const void* args, size_t bytes);

  Vm vm_;  // the register programs (no memory plan: each device tensor has its own buffer)
  DeviceVmOptions options_;
  std::unique_ptr<Device> device_;
  std::map<const Graph*, std::unique_ptr<Program>> programs_;
  std::map<const Program*, std::shared_ptr<DeviceBuffer>> workspaces_;
  // cuda: per function and binding of its parameters' variables, the captured run: the graph,
  // the argument buffers it reads (arguments are copied into them), its result, and every buffer
  // allocated while it was captured (temporaries, converted operands, µGraph outputs,
  // workspaces): its replays read and write them, so they live as long as the graph.
  struct Captured {
    std::vector<std::shared_ptr<DeviceBuffer>> buffers;  // first: destroyed after the graph
    std::unique_ptr<CapturedGraph> graph;
    std::vector<DeviceValue> args;
    DeviceValue result;
  };
  std::map<std::string, Captured> captured_;
  bool capturing_ = false;
  std::vector<std::shared_ptr<DeviceBuffer>> capture_buffers_;  // allocated by the capture so far
  // Set by a kernel that found an index out of range: site << 40 | element (model_kernel_args).
  std::shared_ptr<DeviceBuffer> error_flag_;
  std::map<std::pair<std::string, std::string>, int64_t> index_sites_;
  std::vector<std::pair<SourceLoc, std::string>> site_messages_;
  DeviceVmStats stats_;
  // While trace() runs: the record, and the operator being run (for its launches).
  DeviceTrace* trace_ = nullptr;
  OpKind trace_op_ = OpKind::reshape;
  std::string trace_var_;
};

}  // namespace weft
