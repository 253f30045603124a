// The floating-point side of verification: a candidate run in f32 and f64 against the reference
// program in f64 on random inputs, with the per-dtype tolerances of interp/compare.h.
#pragma once

#include <cstdint>
#include <vector>

#include "interp/compare.h"
#include "interp/domain.h"
#include "ir/graph.h"

namespace weft {

struct OutputFloatError {
  Comparison f32;  // candidate in f32 against the reference in f64
  Comparison f64;  // candidate in f64 against the reference in f64
};

struct FloatCheck {
  std::vector<OutputFloatError> outputs;  // by output position
  bool acceptable = false;                // every output within both tolerances
  bool equal_in_f64 = false;              // every output within the f64 tolerance

  // The largest f32 scaled error over the outputs (max abs error / max abs reference output).
  double worst_f32_error() const;
};

// The reference side of the check, computed once for many candidates: the random inputs and the
// reference program's outputs in f64.
struct FloatReference {
  std::vector<Tensor<double>> inputs;
  std::vector<Tensor<double>> outputs;
};
FloatReference float_reference(const Graph& reference, uint64_t seed);

// `reference` and `candidate` must have matching signatures (checked by the caller). Throws
// EvaluationAbandoned (interp/domain.h) at a matmul that starts after `give_up`.
FloatCheck float_check(const FloatReference& reference, const Graph& candidate,
                       GiveUpAt give_up = {});
FloatCheck float_check(const Graph& reference, const Graph& candidate, uint64_t seed);

}  // namespace weft
