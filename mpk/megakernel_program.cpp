// A lowered plan as one persistent kernel: compile, emit, build, and run on host or device buffers.
#include "mpk/megakernel_program.h"

#include <fmt/format.h>

#include <cstring>

#include "core/error.h"
#include "mpk/device/megakernel_abi.cuh"
#include "mpk/encode.h"
#include "runtime/dtype_convert.h"

#ifdef WEFT_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace weft {
namespace {

// Host buffers in the plan's dtypes: inputs encoded, outputs and workspace 0xff.
struct HostBuffers {
  std::vector<std::vector<uint8_t>> in, out;
  std::vector<uint8_t> workspace;
};

HostBuffers host_buffers(const ProgramPlan& plan, const std::vector<std::vector<float>>& inputs) {
  if (inputs.size() != plan.inputs.size())
    throw UserError(
        fmt::format("{} takes {} inputs, not {}", plan.name, plan.inputs.size(), inputs.size()));
  HostBuffers b;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const PlanBuffer* t = plan.find_tensor(plan.inputs[i]);
    if (static_cast<int64_t>(inputs[i].size()) != numel(t->shape))
      throw UserError(fmt::format("input {} of {} has {} elements, not {}", t->name, plan.name,
                                  inputs[i].size(), numel(t->shape)));
    b.in.push_back(encode_as(inputs[i].data(), inputs[i].size(), t->dtype));
  }
  for (const std::string& name : plan.outputs)
    b.out.emplace_back(static_cast<size_t>(plan.find_tensor(name)->bytes()), 0xff);
  b.workspace.assign(static_cast<size_t>(plan.workspace_bytes) + 256, 0xff);
  return b;
}

std::vector<std::vector<float>> decode_outputs(const ProgramPlan& plan, const HostBuffers& b) {
  std::vector<std::vector<float>> outs;
  for (size_t j = 0; j < plan.outputs.size(); ++j) {
    const PlanBuffer* t = plan.find_tensor(plan.outputs[j]);
    std::vector<float> v(static_cast<size_t>(numel(t->shape)));
    decode_from(b.out[j].data(), v.size(), t->dtype, v.data());
    outs.push_back(std::move(v));
  }
  return outs;
}

std::vector<void*> pointers(std::vector<std::vector<uint8_t>>& buffers) {
  std::vector<void*> p;
  for (auto& b : buffers) p.push_back(b.data());
  return p;
}

#ifdef WEFT_HAVE_CUDA
void check(cudaError_t e, const std::string& what) {
  if (e != cudaSuccess)
    throw UserError(fmt::format("{}: {} ({})", what, cudaGetErrorString(e), cudaGetErrorName(e)));
}

// Device copies of host buffers, copied back after the run, freed on every path out.
struct DeviceBuffers {
  std::vector<void*> in, out;
  void* workspace = nullptr;
  explicit DeviceBuffers(const HostBuffers& host) {
    for (const auto& b : host.in) in.push_back(upload(b));
    for (const auto& b : host.out) out.push_back(upload(b));
    workspace = upload(host.workspace);
  }
  DeviceBuffers(const DeviceBuffers&) = delete;
  DeviceBuffers& operator=(const DeviceBuffers&) = delete;
  ~DeviceBuffers() {
    for (void* p : in) cudaFree(p);
    for (void* p : out) cudaFree(p);
    if (workspace) cudaFree(workspace);
  }
  static void* upload(const std::vector<uint8_t>& host) {
    void* p = nullptr;
    check(cudaMalloc(&p, std::max<size_t>(host.size(), 8)), "cudaMalloc");
    check(cudaMemcpy(p, host.data(), host.size(), cudaMemcpyHostToDevice), "cudaMemcpy");
    return p;
  }
};
#endif

}  // namespace

MegakernelProgram::MegakernelProgram(const ProgramPlan& plan,
                                     const MegakernelProgramOptions& options)
    : plan_(plan) {
  TaskBodyOptions body_options = options.bodies;
  if (body_options.runtime_smem_reserve_bytes == 0)
    body_options.runtime_smem_reserve_bytes = kWeftMpkCommandBytes;
  fit_ = fit_task_bodies(plan_, body_options);
  compiled_ = compile_task_graph(plan_, options.mpk);
  unit_ = emit_megakernel_unit(emit_cuda_task_bodies(plan_, body_options),
                               decode_task_graph(compiled_.blob), options.kernel);
  kernel_ = build_megakernel(unit_, options.emulated, options.arch);
}

MegakernelProgram::~MegakernelProgram() = default;

Timing MegakernelProgram::time(const std::vector<std::vector<float>>& inputs, uint64_t iterations,
                               int warmup, int reps) const {
  HostBuffers host = host_buffers(plan_, inputs);
  if (kernel_->emulated())
    return kernel_->time(compiled_.blob, pointers(host.in), pointers(host.out),
                         host.workspace.data(), iterations, warmup, reps);
#ifdef WEFT_HAVE_CUDA
  DeviceBuffers dev(host);
  return kernel_->time(compiled_.blob, dev.in, dev.out, dev.workspace, iterations, warmup, reps);
#else
  throw UserError("this weft was built without the CUDA toolkit: no GPU megakernel runs");
#endif
}

MegakernelResult MegakernelProgram::run(const std::vector<std::vector<float>>& inputs,
                                        uint64_t iterations, bool trace) const {
  HostBuffers host = host_buffers(plan_, inputs);
  MegakernelResult result;
  if (kernel_->emulated()) {
    result.run = kernel_->run(compiled_.blob, pointers(host.in), pointers(host.out),
                              host.workspace.data(), iterations, trace);
    result.outputs = decode_outputs(plan_, host);
    return result;
  }
#ifdef WEFT_HAVE_CUDA
  DeviceBuffers dev(host);
  result.run = kernel_->run(compiled_.blob, dev.in, dev.out, dev.workspace, iterations, trace);
  if (result.run.ok)
    for (size_t j = 0; j < host.out.size(); ++j)
      check(cudaMemcpy(host.out[j].data(), dev.out[j], host.out[j].size(), cudaMemcpyDeviceToHost),
            "cudaMemcpy of an output");
  result.outputs = decode_outputs(plan_, host);
  return result;
#else
  throw UserError("this weft was built without the CUDA toolkit: no GPU megakernel runs");
#endif
}

}  // namespace weft
