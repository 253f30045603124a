// Non-template parts of the reference interpreter: input checks and the f32/f64 entry point.
#include "interp/interpreter.h"

#include <fmt/format.h>

#include "interp/real_domain.h"

namespace weft {

void check_input_shapes(const Graph& g, const std::vector<Shape>& shapes) {
  if (shapes.size() != g.inputs.size())
    throw UserError(g.loc, fmt::format("'{}' takes {} input{}, but {} {} given",
                                       g.name.empty() ? "the program" : g.name, g.inputs.size(),
                                       g.inputs.size() == 1 ? "" : "s", shapes.size(),
                                       shapes.size() == 1 ? "was" : "were"));
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Value& v = g.value(g.inputs[i]);
    if (shapes[i] != v.type.shape)
      throw UserError(v.loc,
                      fmt::format("input {} ('{}') must have shape {}, but a tensor of "
                                  "shape {} was given",
                                  i + 1, v.name, shape_str(v.type.shape), shape_str(shapes[i])));
  }
}

std::vector<Tensor<double>> evaluate_real(const Graph& g, const std::vector<Tensor<double>>& inputs,
                                          bool f32, GiveUpAt give_up) {
  if (!f32) return evaluate(g, inputs, RealDomain<double>{give_up});
  std::vector<Tensor<float>> in;
  for (const auto& t : inputs) in.push_back(convert_tensor<float>(t));
  std::vector<Tensor<double>> out;
  for (const auto& t : evaluate(g, in, RealDomain<float>{give_up}))
    out.push_back(convert_tensor<double>(t));
  return out;
}

}  // namespace weft
