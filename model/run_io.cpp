// Conversion between NumPy archives and VM values.
#include "model/run_io.h"

#include <fmt/format.h>

#include <cmath>

namespace weft {

std::vector<VmValue> arguments_from_npz(const Function& fn, const NpzArrays& arrays,
                                        const std::string& path) {
  std::vector<VmValue> args;
  for (const Param& p : fn.params) {
    auto it = arrays.find(p.name);
    if (it == arrays.end())
      throw UserError(SourceLoc{path}, fmt::format("no array '{}' for the parameter '{}' of '{}' "
                                                   "(the archive holds {} arrays)",
                                                   p.name, p.name, fn.name, arrays.size()));
    const NpyArray& a = it->second;
    switch (p.type.kind) {
      case MTypeKind::integer: {
        double v = a.tensor.data.empty() ? NAN : a.tensor.data[0];
        if (!a.tensor.shape.empty() || !a.integral || v != std::floor(v))
          throw UserError(SourceLoc{path},
                          fmt::format("array '{}' must be an integer scalar (a 0-d "
                                      "integer array) for parameter '{}'",
                                      p.name, p.name));
        args.push_back(VmValue{static_cast<int64_t>(v)});
        break;
      }
      case MTypeKind::tensor:
      case MTypeKind::shape:
        args.push_back(VmValue{std::make_shared<const Tensor<double>>(a.tensor)});
        break;
      case MTypeKind::tuple:
        throw UserError(p.loc, fmt::format("parameter '{}' is a tuple; `model run` passes tensors "
                                           "and integers only",
                                           p.name));
    }
  }
  return args;
}

namespace {
void flatten(const VmValue& v, const std::string& name,
             std::map<std::string, Tensor<double>>& out) {
  if (const Tensor<double>* t = v.tensor()) {
    out[name] = *t;
  } else if (const VmTuple* tu = v.tuple()) {
    for (size_t i = 0; i < tu->size(); ++i) flatten((*tu)[i], fmt::format("{}.{}", name, i), out);
  } else {
    out[name] = Tensor<double>(Shape{}, static_cast<double>(std::get<int64_t>(v.v)));
  }
}
}  // namespace

std::map<std::string, Tensor<double>> result_arrays(const VmValue& result) {
  std::map<std::string, Tensor<double>> out;
  flatten(result, "result", out);
  return out;
}

}  // namespace weft
