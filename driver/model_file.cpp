// Loading a model file of either format (.onnx through onnx/import, else the .wmod parser) and
// checking shape bindings against its declared variables.
#include "driver/model_file.h"

#include <fmt/format.h>

#include <filesystem>

#include "model/deduce.h"
#include "model/parser.h"

namespace weft {

bool is_model_file(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  return ext == ".wmod" || ext == ".onnx";
}

ModelFile load_model_file(const std::string& path, SymProver& prover,
                          const OnnxImportOptions& onnx) {
  ModelFile out;
  out.path = path;
  if (is_onnx_path(path)) {
    out.imported = import_onnx(path, onnx);
    out.module = out.imported->module;
  } else {
    out.module = load_module(path, prover);
  }
  check_module(out.module, prover);
  return out;
}

void check_binding(const SymBinding& binding, const Module& m) {
  for (const auto& [name, value] : binding) {
    const SymVar* var = m.syms.find(name);
    if (!var) {
      std::string declared;
      for (const auto& [v, _] : m.syms.vars()) declared += (declared.empty() ? "" : ", ") + v;
      throw UserError(fmt::format(
          "binding {}: '{}' is not a symbolic variable of the model ({})", binding_str(binding),
          name, declared.empty() ? "it declares none" : "it declares " + declared));
    }
    if (value < var->lo() || (var->hi() && value > *var->hi()))
      throw UserError(fmt::format("binding {}: {} = {} is not within {}", binding_str(binding),
                                  name, value, var->decl_str()));
  }
}

}  // namespace weft
