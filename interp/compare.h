// Numerical comparison of a program's outputs against a reference, with per-dtype tolerances.
#pragma once

#include "core/dtype.h"
#include "core/tensor.h"

namespace weft {

// Allowed error relative to the reference output's largest magnitude: a candidate passes when
// max |got - ref| <= tolerance * max |ref|. f32 keeps room for reassociated sums of thousands of
// terms (error ~ sqrt(k) * 2^-24 of the magnitude); f64 is the same idea at 2^-53.
inline constexpr double kF32Tolerance = 1e-4;
inline constexpr double kF64Tolerance = 1e-9;
inline double tolerance_for(bool f32) {
  return f32 ? kF32Tolerance : kF64Tolerance;
}

// Results computed in a storage dtype (the GPU backend keeps f16/bf16 tensors): sixteen unit
// roundoffs of the format, room for the roundings of stored intermediates and of the output.
inline double tolerance_for(DType dtype) {
  switch (dtype) {
    case DType::f16:
      return 16 * 0x1p-11;
    case DType::bf16:
      return 16 * 0x1p-8;
    case DType::f64:
      return kF64Tolerance;
    case DType::f32:
    case DType::i64:
    case DType::i32:
    case DType::i16:
    case DType::i8:
    case DType::u8:
    case DType::boolean:
      break;
  }
  return kF32Tolerance;
}

struct Comparison {
  double max_abs_error = 0;  // max |got - ref|
  double max_rel_error = 0;  // max |got - ref| / |ref| over elements with |ref| >= 1e-3 max |ref|
  double max_ref = 0;        // max |ref|
  double scaled_error = 0;   // max_abs_error / max_ref (0 when both are 0)
  double tolerance = 0;      // bound on scaled_error
  bool ok = false;           // within tolerance, same shape, and no NaN
};

// Same-shape tensors; a shape mismatch or a NaN anywhere gives ok = false.
Comparison compare_outputs(const Tensor<double>& got, const Tensor<double>& ref, bool f32);
// The same with an explicit tolerance (e.g. tolerance_for(DType)).
Comparison compare_outputs(const Tensor<double>& got, const Tensor<double>& ref, double tolerance);

}  // namespace weft
