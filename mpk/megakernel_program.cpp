// A lowered plan as one persistent kernel: compile, emit, build, and run on host or device buffers.
#include "mpk/megakernel_program.h"

#include <fmt/format.h>

#include <cstring>

#include "core/error.h"
#include "mpk/decode_tasks.h"
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

HostBuffers host_buffers(const ProgramPlan& plan, const std::vector<std::vector<float>>& inputs,
                         int64_t workspace_bytes) {
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
  b.workspace.assign(static_cast<size_t>(workspace_bytes), 0xff);
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

MegakernelUnit emit_megakernel_program_unit(const ProgramPlan& plan,
                                            const MegakernelProgramOptions& options) {
  TaskBodyOptions body_options = options.bodies;
  if (body_options.runtime_smem_reserve_bytes == 0)
    body_options.runtime_smem_reserve_bytes = kWeftMpkCommandBytes;
  if (options.mpk.decode_on_device) {
    // The decode bodies' shared memory depends on the worker's threads: resolve them first.
    body_options.worker_threads = fit_task_bodies(plan, body_options).worker_threads;
    body_options.extra_task_function = kDecodeTaskFunction;
    body_options.extra_smem_bytes = decode_bodies_smem_bytes(body_options.worker_threads);
  }
  MegakernelUnit u;
  u.fit = fit_task_bodies(plan, body_options);
  u.compiled = compile_task_graph(plan, options.mpk);
  std::string bodies = emit_cuda_task_bodies(plan, body_options);
  if (options.mpk.decode_on_device) bodies += emit_decode_task_bodies(plan);
  u.unit = emit_megakernel_unit(bodies, decode_task_graph(u.compiled.blob), options.kernel);
  return u;
}

MegakernelProgram::MegakernelProgram(const ProgramPlan& plan,
                                     const MegakernelProgramOptions& options)
    : plan_(plan), decode_on_device_(options.mpk.decode_on_device) {
  MegakernelUnit u = emit_megakernel_program_unit(plan_, options);
  fit_ = std::move(u.fit);
  compiled_ = std::move(u.compiled);
  unit_ = std::move(u.unit);
  kernel_ = build_megakernel(unit_, options.emulated, options.arch);
}

MegakernelProgram::~MegakernelProgram() = default;

namespace {
// run and time start from outputs and workspace of 0xff bytes: no decode state to start from.
void refuse_decode_tasks(bool decode_on_device, const ProgramPlan& plan) {
  if (decode_on_device)
    throw UserError(fmt::format(
        "{}: a persistent kernel with the decode loop's tasks runs through decode(), which "
        "places the decode state first",
        plan.name));
}
}  // namespace

Timing MegakernelProgram::time(const std::vector<std::vector<float>>& inputs, uint64_t iterations,
                               int warmup, int reps) const {
  refuse_decode_tasks(decode_on_device_, plan_);
  HostBuffers host = host_buffers(plan_, inputs, workspace_bytes());
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
  refuse_decode_tasks(decode_on_device_, plan_);
  HostBuffers host = host_buffers(plan_, inputs, workspace_bytes());
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

int64_t MegakernelProgram::workspace_bytes() const {
  if (decode_on_device_)
    return decode_device_layout(plan_, decode_interface(plan_)).workspace_bytes;
  return plan_.workspace_bytes + 256;
}

ResidentDecode MegakernelProgram::decode(const DecodeOptions& options,
                                         const ResidentDecodeOptions& resident) const {
  if (!decode_on_device_)
    throw UserError(fmt::format(
        "{}: the persistent kernel was built without the decode tasks (decode_on_device)",
        plan_.name));
  if (resident.tokens_per_launch < 1)
    throw UserError(fmt::format("{} tokens per launch", resident.tokens_per_launch));
  const DecodeInterface in = decode_interface(plan_);
  const DecodeDeviceLayout layout = decode_device_layout(plan_, in);
  const DecodeStart start = decode_start(plan_, options);
  const int64_t prompt = static_cast<int64_t>(start.tokens.size());
  if (prompt > in.ctx + 1)
    throw UserError(
        fmt::format("a prompt of {} tokens: the cache holds {} positions", prompt, in.ctx));
  HostBuffers host = host_buffers(plan_, start.inputs, layout.workspace_bytes);
  std::vector<float> state(static_cast<size_t>(layout.state_words), 0.0f);
  state[1] = static_cast<float>(prompt);
  for (size_t i = 0; i < start.tokens.size(); ++i)
    state[2 + i] = static_cast<float>(start.tokens[i]);
  auto place = [&](int64_t offset, const void* data, size_t bytes) {
    std::memcpy(host.workspace.data() + offset, data, bytes);
  };
  place(layout.state_offset, state.data(), state.size() * sizeof(float));
  if (layout.inv_freq_offset >= 0)
    place(layout.inv_freq_offset, start.inv_freq.data(), start.inv_freq.size() * sizeof(double));
  if (layout.table_offset >= 0)
    place(layout.table_offset, start.embedding.data(), start.embedding.size() * sizeof(float));

  ResidentDecode r;
  for (const auto& b : host.in) r.setup_bytes += static_cast<int64_t>(b.size());
  for (const auto& b : host.out) r.setup_bytes += static_cast<int64_t>(b.size());
  r.setup_bytes += static_cast<int64_t>(host.workspace.size());
  std::vector<void*> in_ptrs = pointers(host.in), out_ptrs = pointers(host.out);
  unsigned char* workspace = host.workspace.data();
#ifdef WEFT_HAVE_CUDA
  std::unique_ptr<DeviceBuffers> dev;
  if (!kernel_->emulated()) {
    dev = std::make_unique<DeviceBuffers>(host);
    in_ptrs = dev->in;
    out_ptrs = dev->out;
    workspace = static_cast<unsigned char*>(dev->workspace);
  }
#endif
  // Device (or, emulated, host) memory to the host.
  auto fetch = [&](void* dst, const void* src, size_t bytes) {
    if (kernel_->emulated()) {
      std::memcpy(dst, src, bytes);
      return;
    }
#ifdef WEFT_HAVE_CUDA
    check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy from the device");
#endif
  };
  std::unique_ptr<PreparedLaunch> launch =
      kernel_->prepare(compiled_.blob, in_ptrs, out_ptrs, workspace);
  const float* device_state = reinterpret_cast<const float*>(workspace + layout.state_offset);
  const size_t logits_bytes = host.out[in.logits].size();
  r.bytes_per_launch = 4 + (resident.logits ? static_cast<int64_t>(logits_bytes) : 0);
  std::vector<float> newest;  // the token each launch left for the next step
  int64_t done = 0;
  while (done < options.tokens) {
    const int64_t n = std::min<int64_t>(resident.tokens_per_launch, options.tokens - done);
    MegakernelRun run = launch->run(static_cast<uint64_t>(n), resident.trace);
    if (!run.ok) throw UserError(fmt::format("the persistent kernel tripped: {}", run.report));
    r.decode.run.seconds += run.seconds;
    if (resident.trace) r.traces.push_back({done, std::move(run.trace)});
    ++r.launches;
    done += n;
    newest.push_back(0);
    fetch(&newest.back(), device_state + 2 + done, sizeof(float));
    if (resident.logits) {
      fetch(host.out[in.logits].data(), out_ptrs[in.logits], logits_bytes);
      std::vector<float> v(static_cast<size_t>(in.vocab));
      decode_from(host.out[in.logits].data(), v.size(),
                  plan_.find_tensor(plan_.outputs[in.logits])->dtype, v.data());
      r.decode.logits.push_back(std::move(v));
    }
  }
  fetch(state.data(), device_state, state.size() * sizeof(float));
  const int64_t kept = std::max<int64_t>(prompt, options.tokens + 1);
  for (int64_t i = 0; i < kept; ++i)
    r.decode.tokens.push_back(static_cast<int>(state[static_cast<size_t>(2 + i)]));
  WEFT_CHECK(static_cast<int64_t>(state[0]) == options.tokens,
             "the device decoded to position {}, not {}", state[0], options.tokens);
  int64_t at = 0;
  for (size_t l = 0; l < newest.size(); ++l) {
    at = std::min<int64_t>(options.tokens, at + resident.tokens_per_launch);
    WEFT_CHECK(newest[l] == state[static_cast<size_t>(2 + at)], "launch {} left token {}, not {}",
               l, newest[l], state[static_cast<size_t>(2 + at)]);
  }
  return r;
}

}  // namespace weft
