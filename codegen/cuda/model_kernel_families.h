// The model executor's device kernel families as data (codegen/cuda/device/model_kernels.cuh):
// each family's name, argument struct size and the pointers in it, so that a launch recorded as
// bytes (exec/device_trace.h) can become a task body that runs the same kernel on other buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"

namespace weft {

enum class DkFamily : uint8_t {
  map,
  elementwise,
  rows,
  gather,
  index,
  matmul,
  position,
  generate,
  window,
};

// A pointer field of an argument struct: its byte offset, whether the kernel writes through it,
// and its name (for generated code's comments and errors).
struct DkPointerField {
  size_t offset = 0;
  bool written = false;
  const char* name = "";
};

struct DkFamilyInfo {
  DkFamily family;
  const char* name;  // weft_dk_map: the kernel; NAME_args, NAME_body, NAME_launch
  size_t args_bytes;
  std::vector<DkPointerField> pointers;
  // The elements the body strides over (NAME_work of model_kernel_args.cuh) for an argument
  // struct of args_bytes bytes.
  int64_t (*work)(const void* args);
};

const DkFamilyInfo& dk_family(DkFamily f);
const std::vector<DkFamilyInfo>& dk_families();
// A dtype as the kernels' argument structs code it (0 f32, 1 f16, 2 bf16).
int dk_dtype_code(DType d);

// The family of a launch entry point ("weft_dk_map_launch") or a kernel name ("weft_dk_map").
std::optional<DkFamily> dk_family_by_name(std::string_view name);

}  // namespace weft
