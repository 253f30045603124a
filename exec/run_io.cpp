// Conversion between NumPy archives and VM values.
#include "exec/run_io.h"

#include <fmt/format.h>

#include <cmath>

namespace weft {

const Function& function_to_run(const Module& module, const std::string& name,
                                const SourceLoc& where) {
  if (const Function* fn = module.find_function(name)) return *fn;
  std::string names;
  for (const Function& f : module.functions) names += (names.empty() ? "" : ", ") + f.name;
  throw UserError(where, fmt::format("no function '{}' (the module's functions: {})", name, names));
}

VmValue argument_value(const Param& p, const NpyArray& a, const std::string& what,
                       const SourceLoc& where) {
  switch (p.type.kind) {
    case MTypeKind::integer: {
      double v = a.tensor.data.empty() ? NAN : a.tensor.data[0];
      if (!a.tensor.shape.empty() || !a.integral || v != std::floor(v))
        throw UserError(where, fmt::format("{} must be an integer scalar (a 0-d integer array) "
                                           "for parameter '{}'",
                                           what, p.name));
      return VmValue{static_cast<int64_t>(v)};
    }
    case MTypeKind::tensor:
    case MTypeKind::shape:
      return VmValue{std::make_shared<Tensor<double>>(a.tensor)};
    case MTypeKind::tuple:
      throw UserError(p.loc, fmt::format("parameter '{}' is a tuple; a run passes tensors and "
                                         "integers only",
                                         p.name));
  }
  WEFT_FAIL("unknown MTypeKind");
}

std::vector<VmValue> arguments_from_npz(const Function& fn, const NpzArrays& arrays,
                                        const std::string& path) {
  std::vector<VmValue> args;
  for (const Param& p : fn.params) {
    auto it = arrays.find(p.name);
    if (it == arrays.end())
      throw UserError(SourceLoc{path}, fmt::format("no array '{}' for the parameter '{}' of '{}' "
                                                   "(the archive holds {} arrays)",
                                                   p.name, p.name, fn.name, arrays.size()));
    args.push_back(
        argument_value(p, it->second, fmt::format("array '{}'", p.name), SourceLoc{path}));
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

void flatten_elements(const MType& type, const std::string& name,
                      std::map<std::string, NpyElement>& out) {
  if (type.is_tensor()) out[name] = npy_element(type.dtype);
  for (size_t i = 0; i < type.fields.size(); ++i)
    flatten_elements(type.fields[i], fmt::format("{}.{}", name, i), out);
}
}  // namespace

std::map<std::string, Tensor<double>> result_arrays(const VmValue& result) {
  std::map<std::string, Tensor<double>> out;
  flatten(result, "result", out);
  return out;
}

std::map<std::string, NpyElement> weight_elements(
    const Module& module, const std::map<std::string, Tensor<double>>& weights) {
  std::map<std::string, NpyElement> out;
  for (const Function& f : module.functions)
    for (const Param& p : f.params)
      if (p.type.is_tensor() && weights.count(p.name))
        out.emplace(p.name, npy_element(p.type.dtype));
  return out;
}

std::map<std::string, NpyElement> result_elements(const MType& ret) {
  std::map<std::string, NpyElement> out;
  flatten_elements(ret, "result", out);
  return out;
}

}  // namespace weft
