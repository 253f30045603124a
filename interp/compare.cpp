// Output comparison against a reference within a dtype tolerance.
#include "interp/compare.h"

#include <cmath>
#include <limits>

namespace weft {

Comparison compare_outputs(const Tensor<double>& got, const Tensor<double>& ref, bool f32) {
  return compare_outputs(got, ref, tolerance_for(f32));
}

Comparison compare_outputs(const Tensor<double>& got, const Tensor<double>& ref, double tolerance) {
  Comparison c;
  c.tolerance = tolerance;
  if (got.shape != ref.shape) {
    c.max_abs_error = c.max_rel_error = c.scaled_error = std::numeric_limits<double>::infinity();
    return c;
  }
  bool nan = false;
  for (size_t i = 0; i < ref.data.size(); ++i) {
    c.max_ref = std::max(c.max_ref, std::fabs(ref.data[i]));
    double e = std::fabs(got.data[i] - ref.data[i]);
    if (std::isnan(e)) nan = true;
    c.max_abs_error = std::max(c.max_abs_error, e);
  }
  for (size_t i = 0; i < ref.data.size(); ++i) {
    double r = std::fabs(ref.data[i]);
    if (r > 0 && r >= 1e-3 * c.max_ref)
      c.max_rel_error = std::max(c.max_rel_error, std::fabs(got.data[i] - ref.data[i]) / r);
  }
  c.scaled_error = c.max_abs_error == 0 ? 0.0
                   : c.max_ref == 0     ? std::numeric_limits<double>::infinity()
                                        : c.max_abs_error / c.max_ref;
  c.ok = !nan && std::isfinite(c.max_ref) && c.scaled_error <= c.tolerance;
  return c;
}

}  // namespace weft
