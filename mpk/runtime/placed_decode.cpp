// A decode loop's buffers and state placed once, on the host or the GPU.
#include "mpk/runtime/placed_decode.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/dtype_convert.h"
#include "core/error.h"
#include "mpk/runtime/cuda_error.h"

namespace weft {

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
namespace {
void* upload(const std::vector<uint8_t>& host) {
  void* p = nullptr;
  check(cudaMalloc(&p, std::max<size_t>(host.size(), 8)), "cudaMalloc");
  if (cudaMemcpy(p, host.data(), host.size(), cudaMemcpyHostToDevice) != cudaSuccess) {
    cudaFree(p);
    check(cudaGetLastError(), "cudaMemcpy");
  }
  return p;
}
void release(DeviceBuffers& d) {
  for (void* p : d.in) cudaFree(p);
  for (void* p : d.out) cudaFree(p);
  if (d.workspace) cudaFree(d.workspace);
}
}  // namespace

DeviceBuffers::DeviceBuffers(const HostBuffers& host) {
  try {
    for (const auto& b : host.in) in.push_back(upload(b));
    for (const auto& b : host.out) out.push_back(upload(b));
    workspace = upload(host.workspace);
  } catch (...) {
    release(*this);  // a throwing constructor runs no destructor
    throw;
  }
}

DeviceBuffers::~DeviceBuffers() {
  release(*this);
}

void PlacedDecode::fetch(void* dst, const void* src, size_t bytes) const {
  if (!device) {
    std::memcpy(dst, src, bytes);
    return;
  }
  check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy from the device");
}
#else
DeviceBuffers::DeviceBuffers(const HostBuffers&) {
  throw UserError("this weft was built without the CUDA toolkit: no GPU buffers");
}
DeviceBuffers::~DeviceBuffers() = default;

void PlacedDecode::fetch(void* dst, const void* src, size_t bytes) const {
  WEFT_CHECK(!device, "device buffers without the CUDA toolkit");
  std::memcpy(dst, src, bytes);
}
#endif

float PlacedDecode::token(int64_t i) const {
  float v = 0;
  fetch(&v, workspace + layout.state_offset + 4 * (2 + i), sizeof v);
  return v;
}

std::vector<float> PlacedDecode::logits(const ProgramPlan& plan) {
  std::vector<uint8_t>& bytes = host.out[interface.logits];
  fetch(bytes.data(), outputs[interface.logits], bytes.size());
  std::vector<float> v(static_cast<size_t>(interface.vocab));
  decode_from(bytes.data(), v.size(), plan.find_tensor(plan.outputs[interface.logits])->dtype,
              v.data());
  return v;
}

int64_t PlacedDecode::bytes_back(bool logits) const {
  return 4 + (logits ? static_cast<int64_t>(host.out[interface.logits].size()) : 0);
}

std::vector<int> PlacedDecode::tokens(int64_t decoded) const {
  std::vector<float> state(static_cast<size_t>(layout.state_words));
  fetch(state.data(), workspace + layout.state_offset, state.size() * sizeof(float));
  WEFT_CHECK(static_cast<int64_t>(state[0]) == decoded, "the device decoded to position {}, not {}",
             state[0], decoded);
  const int64_t kept = std::max<int64_t>(prompt, decoded + 1);
  std::vector<int> t;
  for (int64_t i = 0; i < kept; ++i)
    t.push_back(static_cast<int>(state[static_cast<size_t>(2 + i)]));
  return t;
}

PlacedDecode place_decode(const ProgramPlan& plan, const DecodeOptions& options, bool on_gpu) {
  PlacedDecode p;
  p.interface = decode_interface(plan);
  p.layout = decode_device_layout(plan, p.interface);
  // The f32 inputs (every weight) are dropped once encoded in the plan's dtypes.
  const DecodeStart start = decode_start(plan, options);
  p.prompt = static_cast<int64_t>(start.tokens.size());
  if (p.prompt > p.interface.ctx + 1)
    throw UserError(fmt::format("a prompt of {} tokens: the cache holds {} positions", p.prompt,
                                p.interface.ctx));
  p.host = host_buffers(plan, start.inputs, p.layout.workspace_bytes);
  std::vector<float> state(static_cast<size_t>(p.layout.state_words), 0.0f);
  state[1] = static_cast<float>(p.prompt);
  for (size_t i = 0; i < start.tokens.size(); ++i)
    state[2 + i] = static_cast<float>(start.tokens[i]);
  auto place = [&](int64_t offset, const void* data, size_t bytes) {
    std::memcpy(p.host.workspace.data() + offset, data, bytes);
  };
  place(p.layout.state_offset, state.data(), state.size() * sizeof(float));
  if (p.layout.inv_freq_offset >= 0)
    place(p.layout.inv_freq_offset, start.inv_freq.data(), start.inv_freq.size() * sizeof(double));
  if (p.layout.table_offset >= 0)
    place(p.layout.table_offset, start.embedding.data(), start.embedding.size() * sizeof(float));
  for (const auto& b : p.host.in) p.setup_bytes += static_cast<int64_t>(b.size());
  for (const auto& b : p.host.out) p.setup_bytes += static_cast<int64_t>(b.size());
  p.setup_bytes += static_cast<int64_t>(p.host.workspace.size());
  if (on_gpu) {
    p.device = std::make_unique<DeviceBuffers>(p.host);
    p.inputs = p.device->in;
    p.outputs = p.device->out;
    p.workspace = static_cast<unsigned char*>(p.device->workspace);
  } else {
    p.inputs = pointers(p.host.in);
    p.outputs = pointers(p.host.out);
    p.workspace = p.host.workspace.data();
  }
  return p;
}

}  // namespace weft
