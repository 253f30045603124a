// Kernel plan helpers: names of enums, layouts and lookups.
#include "lower/plan.h"

#include "core/error.h"

namespace weft {

std::string_view mem_space_name(MemSpace s) {
  switch (s) {
    case MemSpace::device:
      return "device";
    case MemSpace::shared:
      return "shared";
    case MemSpace::reg:
      return "reg";
  }
  return "?";
}

std::string_view tensor_role_name(TensorRole r) {
  switch (r) {
    case TensorRole::input:
      return "input";
    case TensorRole::output:
      return "output";
    case TensorRole::temp:
      return "temp";
  }
  return "?";
}

std::string_view step_kind_name(StepKind k) {
  switch (k) {
    case StepKind::load:
      return "load";
    case StepKind::compute:
      return "compute";
    case StepKind::thread:
      return "thread";
    case StepKind::accum:
      return "accum";
    case StepKind::store:
      return "store";
    case StepKind::barrier:
      return "barrier";
    case StepKind::call:
      return "call";
  }
  return "?";
}

std::vector<int64_t> layout_strides(const Shape& shape, int contiguous_dim) {
  int rank = static_cast<int>(shape.size());
  WEFT_CHECK(contiguous_dim >= 0 && contiguous_dim < rank, "contiguous dim {} of rank {}",
             contiguous_dim, rank);
  std::vector<int64_t> strides(shape.size(), 0);
  strides[contiguous_dim] = 1;
  int64_t s = shape[contiguous_dim];
  for (int d = rank - 1; d >= 0; --d) {
    if (d == contiguous_dim) continue;
    strides[d] = s;
    s *= shape[d];
  }
  return strides;
}

int64_t stage_stride(const PlanBuffer& b) {
  return (b.bytes() + 127) / 128 * 128;
}

bool is_pipelined(const KernelPlan& k, const std::string& name) {
  if (k.library || k.stages <= 1) return false;
  for (const Step& s : k.loop_steps)
    if (s.kind == StepKind::load && !s.hoisted && s.outputs.at(0) == name) return true;
  return false;
}

int64_t footprint_bytes(const KernelPlan& k, const PlanBuffer& b) {
  return is_pipelined(k, b.name) ? k.stages * stage_stride(b) : b.bytes();
}

const PlanBuffer* KernelPlan::find_buffer(const std::string& name) const {
  for (const PlanBuffer& b : buffers)
    if (b.name == name) return &b;
  return nullptr;
}
PlanBuffer* KernelPlan::find_buffer(const std::string& name) {
  for (PlanBuffer& b : buffers)
    if (b.name == name) return &b;
  return nullptr;
}
const PlanBuffer* ProgramPlan::find_tensor(const std::string& name) const {
  for (const PlanBuffer& b : tensors)
    if (b.name == name) return &b;
  return nullptr;
}
PlanBuffer* ProgramPlan::find_tensor(const std::string& name) {
  for (PlanBuffer& b : tensors)
    if (b.name == name) return &b;
  return nullptr;
}

bool is_device_kernel_call(const Step& s) {
  return s.kind == StepKind::call && s.attrs.has("dk");
}

int64_t library_tasks(const KernelPlan& k) {
  const Step& s = k.loop_steps.at(0);
  return is_device_kernel_call(s) ? s.attrs.get_int_or("dk_tasks", 1) : 1;
}

}  // namespace weft
