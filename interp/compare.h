// Numerical comparison of a program's outputs against a reference, with per-dtype tolerances.
#pragma once

#include "interp/tensor.h"

namespace weft {

// Allowed error relative to the reference output's largest magnitude: a candidate passes when
// max |got - ref| <= tolerance * max |ref|. f32 keeps room for reassociated sums of thousands of
// terms (error ~ sqrt(k) * 2^-24 of the magnitude); f64 is the same idea at 2^-53.
inline constexpr double kF32Tolerance = 1e-4;
inline constexpr double kF64Tolerance = 1e-9;
inline double tolerance_for(bool f32) {
  return f32 ? kF32Tolerance : kF64Tolerance;
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

}  // namespace weft
