// A plan's persistent kernel launched step after step on tensors placed once.
#include "mpk/runtime/resident_plan.h"

#include <fmt/format.h>

#include <cstring>

#include "core/dtype_convert.h"
#include "core/error.h"
#include "mpk/runtime/cuda_error.h"

namespace weft {
namespace {

enum class Copy : uint8_t { to_device, to_host, on_device };

void copy_bytes(bool on_gpu, void* dst, const void* src, size_t bytes, Copy kind) {
  if (!on_gpu) {
    std::memcpy(dst, src, bytes);
    return;
  }
#ifdef WEFT_HAVE_CUDA
  const cudaMemcpyKind k = kind == Copy::to_device ? cudaMemcpyHostToDevice
                           : kind == Copy::to_host ? cudaMemcpyDeviceToHost
                                                   : cudaMemcpyDeviceToDevice;
  check(cudaMemcpy(dst, src, bytes, k), "cudaMemcpy of resident plan tensors");
#else
  (void)kind;
  WEFT_CHECK(false, "device buffers without the CUDA toolkit");
#endif
}

void check_range(const PlanBuffer& t, int64_t first, int64_t count, const char* what) {
  if (first < 0 || count < 0 || first + count > numel(t.shape))
    throw UserError(fmt::format("{} elements [{}, {}) of {}, which has {}", what, first,
                                first + count, t.name, numel(t.shape)));
}

}  // namespace

ResidentPlanRun::ResidentPlanRun(const ProgramPlan& plan, const LoadedMegakernel& kernel,
                                 const std::vector<uint8_t>& blob,
                                 const std::vector<std::vector<float>>& inputs,
                                 int64_t workspace_bytes)
    : plan_(plan), host_(host_buffers(plan, inputs, workspace_bytes)) {
  for (const auto& b : host_.in) setup_bytes_ += static_cast<int64_t>(b.size());
  for (const auto& b : host_.out) setup_bytes_ += static_cast<int64_t>(b.size());
  setup_bytes_ += static_cast<int64_t>(host_.workspace.size());
  if (kernel.emulated()) {
    inputs_ = pointers(host_.in);
    outputs_ = pointers(host_.out);
    workspace_ = host_.workspace.data();
  } else {
    device_ = std::make_unique<DeviceBuffers>(host_);
    inputs_ = device_->in;
    outputs_ = device_->out;
    workspace_ = device_->workspace;
  }
  launch_ = kernel.prepare(blob, inputs_, outputs_, workspace_);
}

ResidentPlanRun::~ResidentPlanRun() = default;

const PlanBuffer& ResidentPlanRun::input_tensor(size_t input) const {
  WEFT_CHECK(input < plan_.inputs.size(), "input {} of a plan of {}", input, plan_.inputs.size());
  return *plan_.find_tensor(plan_.inputs[input]);
}

const PlanBuffer& ResidentPlanRun::output_tensor(size_t output) const {
  WEFT_CHECK(output < plan_.outputs.size(), "output {} of a plan of {}", output,
             plan_.outputs.size());
  return *plan_.find_tensor(plan_.outputs[output]);
}

void ResidentPlanRun::write_input(size_t input, int64_t first, const std::vector<float>& values) {
  const PlanBuffer& t = input_tensor(input);
  const auto count = static_cast<int64_t>(values.size());
  check_range(t, first, count, "writing");
  const std::vector<uint8_t> bytes = encode_as(values.data(), values.size(), t.dtype);
  auto* dst = static_cast<uint8_t*>(inputs_[input]) + first * dtype_bytes(t.dtype);
  copy_bytes(device_ != nullptr, dst, bytes.data(), bytes.size(), Copy::to_device);
  bytes_to_device_ += static_cast<int64_t>(bytes.size());
}

std::vector<float> ResidentPlanRun::read_output(size_t output, int64_t first, int64_t count) {
  const PlanBuffer& t = output_tensor(output);
  check_range(t, first, count, "reading");
  const int64_t size = dtype_bytes(t.dtype);
  std::vector<uint8_t> bytes(static_cast<size_t>(count * size));
  copy_bytes(device_ != nullptr, bytes.data(),
             static_cast<const uint8_t*>(outputs_[output]) + first * size, bytes.size(),
             Copy::to_host);
  bytes_to_host_ += static_cast<int64_t>(bytes.size());
  std::vector<float> values(static_cast<size_t>(count));
  decode_from(bytes.data(), values.size(), t.dtype, values.data());
  return values;
}

void ResidentPlanRun::copy_output_to_input(size_t output, int64_t from, size_t input, int64_t to,
                                           int64_t count) {
  const PlanBuffer& src = output_tensor(output);
  const PlanBuffer& dst = input_tensor(input);
  if (src.dtype != dst.dtype)
    throw UserError(fmt::format("copying {} ({}) into {} ({}): the dtypes differ", src.name,
                                dtype_name(src.dtype), dst.name, dtype_name(dst.dtype)));
  check_range(src, from, count, "copying");
  check_range(dst, to, count, "copying into");
  const int64_t size = dtype_bytes(src.dtype);
  copy_bytes(device_ != nullptr, static_cast<uint8_t*>(inputs_[input]) + to * size,
             static_cast<const uint8_t*>(outputs_[output]) + from * size,
             static_cast<size_t>(count * size), Copy::on_device);
}

MegakernelRun ResidentPlanRun::launch(bool trace) {
  MegakernelRun run = launch_->run(1, trace);
  if (!run.ok) throw UserError(fmt::format("the persistent kernel tripped: {}", run.report));
  return run;
}

}  // namespace weft
