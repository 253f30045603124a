// Floating-point comparison of two programs on shared random inputs.
#include "verify/float_check.h"

#include <algorithm>

#include "interp/interpreter.h"
#include "interp/random_inputs.h"

namespace weft {

FloatReference float_reference(const Graph& reference, uint64_t seed) {
  FloatReference r;
  r.inputs = random_inputs(reference, seed);
  r.outputs = evaluate_real(reference, r.inputs, /*f32=*/false);
  return r;
}

FloatCheck float_check(const Graph& reference, const Graph& candidate, uint64_t seed) {
  return float_check(float_reference(reference, seed), candidate);
}

FloatCheck float_check(const FloatReference& reference, const Graph& candidate, GiveUpAt give_up) {
  const auto& ref = reference.outputs;
  const auto got64 = evaluate_real(candidate, reference.inputs, /*f32=*/false, give_up);
  const auto got32 = evaluate_real(candidate, reference.inputs, /*f32=*/true, give_up);
  FloatCheck fc;
  fc.acceptable = fc.equal_in_f64 = true;
  for (size_t o = 0; o < ref.size(); ++o) {
    OutputFloatError e{compare_outputs(got32[o], ref[o], true),
                       compare_outputs(got64[o], ref[o], false)};
    fc.acceptable = fc.acceptable && e.f32.ok && e.f64.ok;
    fc.equal_in_f64 = fc.equal_in_f64 && e.f64.ok;
    fc.outputs.push_back(e);
  }
  return fc;
}

double FloatCheck::worst_f32_error() const {
  double worst = 0;
  for (const OutputFloatError& e : outputs) worst = std::max(worst, e.f32.scaled_error);
  return worst;
}

}  // namespace weft
