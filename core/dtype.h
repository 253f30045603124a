// Element types of tensors.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace weft {

enum class DType : uint8_t { f32, f16, bf16 };

std::string_view dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);
int dtype_bytes(DType t);

}  // namespace weft
