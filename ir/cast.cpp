// ONNX Cast's targets and rounding.
#include "ir/cast.h"

#include <algorithm>
#include <cmath>

#include "core/dtype_convert.h"
#include "core/error.h"

namespace weft {

namespace {

constexpr CastTarget kCastTargets[] = {
    {1, "f32", CastTarget::f32, 32},    {2, "u8", CastTarget::uint, 8},
    {3, "i8", CastTarget::sint, 8},     {4, "u16", CastTarget::uint, 16},
    {5, "i16", CastTarget::sint, 16},   {6, "i32", CastTarget::sint, 32},
    {7, "i64", CastTarget::sint, 64},   {9, "bool", CastTarget::boolean, 1},
    {10, "f16", CastTarget::f16, 16},   {11, "f64", CastTarget::f64, 64},
    {12, "u32", CastTarget::uint, 32},  {13, "u64", CastTarget::uint, 64},
    {16, "bf16", CastTarget::bf16, 16},
};

}  // namespace

std::span<const CastTarget> cast_targets() {
  return kCastTargets;
}

const CastTarget* cast_target(int64_t code) {
  for (const CastTarget& t : kCastTargets)
    if (t.code == code) return &t;
  return nullptr;
}

DType cast_result_dtype(const CastTarget& t) {
  switch (t.kind) {
    case CastTarget::f32:
      return DType::f32;
    case CastTarget::f64:
      return DType::f64;
    case CastTarget::f16:
      return DType::f16;
    case CastTarget::bf16:
      return DType::bf16;
    case CastTarget::boolean:
      return DType::boolean;
    case CastTarget::sint:
      return t.bits == 8    ? DType::i8
             : t.bits == 16 ? DType::i16
             : t.bits == 32 ? DType::i32
                            : DType::i64;
    case CastTarget::uint:
      return t.bits == 8 ? DType::u8 : DType::i64;
  }
  return DType::f32;
}

int64_t cast_code_of(DType dtype) {
  for (const CastTarget& t : kCastTargets)
    if (cast_result_dtype(t) == dtype && (t.kind != CastTarget::uint || t.bits == 8)) return t.code;
  WEFT_FAIL("no cast target yields {}", dtype_name(dtype));
}

double cast_scalar(double v, CastTarget::Kind kind, int bits) {
  switch (kind) {
    case CastTarget::f32:
      return static_cast<float>(v);
    case CastTarget::f64:
      return v;
    case CastTarget::f16:
      return round_to_dtype(static_cast<float>(v), DType::f16);
    case CastTarget::bf16:
      return round_to_dtype(static_cast<float>(v), DType::bf16);
    case CastTarget::boolean:
      return v != 0 ? 1.0 : 0.0;
    case CastTarget::sint:
    case CastTarget::uint:
      // Toward zero, then modulo 2^bits as two's complement (numpy's astype for in-range
      // values); NaN gives 0 and values beyond int64 saturate first.
      return wrap_integer(v, bits, kind == CastTarget::sint);
  }
  return v;
}

}  // namespace weft
