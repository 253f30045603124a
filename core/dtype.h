// Element types of tensors: the float types kernels compute with (f32, f16, bf16) and the types
// only the model layer holds (f64, the integers and bool of index, shape and mask tensors).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace weft {

enum class DType : uint8_t { f32, f16, bf16, f64, i64, i32, i16, i8, u8, boolean };

// "f32", ..., "i64", "u8", "bool".
std::string_view dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);
int dtype_bytes(DType t);
// The names of every dtype, for error messages: "f32, f16, ..., bool".
std::string_view dtype_names();

// f32, f16, bf16: the types µGraphs (kernel programs) and their kernels compute with.
bool is_kernel_dtype(DType t);
// The kernel dtypes and f64.
bool is_float_dtype(DType t);
// i64, i32, i16, i8, u8 (bool is neither float nor integer).
bool is_integer_dtype(DType t);

}  // namespace weft
