// ONNX Cast's targets: the dtype codes weft casts to, and the rounding of a value to one of them,
// which the cast row's real semantics (ir/ops_model.cpp) and its device form (weft_dk_cast in
// codegen/cuda/device/model_kernels.cuh, with the same kind codes) perform.
#pragma once

#include <cstdint>
#include <span>

#include "core/dtype.h"

namespace weft {

// A cast target by ONNX's TensorProto.DataType code: the type's width in bits, whether it is
// signed, and the model dtype the result carries (u16, u32, u64, which weft has no dtype for,
// give i64 holding their values). The kind's values are the device form's codes.
struct CastTarget {
  int64_t code;
  const char* name;
  enum Kind : uint8_t { f32, f64, f16, bf16, sint, uint, boolean } kind;
  int bits;
};

// Every target, in code order.
std::span<const CastTarget> cast_targets();
// The target of ONNX dtype code `code`; null for a code weft does not cast to.
const CastTarget* cast_target(int64_t code);
// The dtype a cast to `t` yields.
DType cast_result_dtype(const CastTarget& t);
// The ONNX code of the cast target that yields `dtype`.
int64_t cast_code_of(DType dtype);
// `v` rounded as a target of `kind` and `bits` rounds it: floats to nearest, integers toward
// zero and then modulo 2^bits (NaN gives 0, values beyond int64 saturate first), bool to 0 or 1.
double cast_scalar(double v, CastTarget::Kind kind, int bits);

}  // namespace weft
