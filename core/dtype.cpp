// Names, sizes and classes of element types.
#include "core/dtype.h"

namespace weft {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
    case DType::f64:
      return "f64";
    case DType::i64:
      return "i64";
    case DType::i32:
      return "i32";
    case DType::i16:
      return "i16";
    case DType::i8:
      return "i8";
    case DType::u8:
      return "u8";
    case DType::boolean:
      return "bool";
  }
  return "?";
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i64, DType::i32,
                  DType::i16, DType::i8, DType::u8, DType::boolean})
    if (dtype_name(t) == name) return t;
  return std::nullopt;
}

std::string_view dtype_names() {
  return "f32, f16, bf16, f64, i64, i32, i16, i8, u8, bool";
}

int dtype_bytes(DType t) {
  switch (t) {
    case DType::f64:
    case DType::i64:
      return 8;
    case DType::f32:
    case DType::i32:
      return 4;
    case DType::f16:
    case DType::bf16:
    case DType::i16:
      return 2;
    case DType::i8:
    case DType::u8:
    case DType::boolean:
      return 1;
  }
  return 4;
}

bool is_kernel_dtype(DType t) {
  return t == DType::f32 || t == DType::f16 || t == DType::bf16;
}

bool is_float_dtype(DType t) {
  return is_kernel_dtype(t) || t == DType::f64;
}

bool is_integer_dtype(DType t) {
  return t == DType::i64 || t == DType::i32 || t == DType::i16 || t == DType::i8 || t == DType::u8;
}

}  // namespace weft
