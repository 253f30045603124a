// A model file as a library call: the one place a model's format is chosen (.wmod parsed, .onnx
// imported with its weights and ONNX names), and shape bindings checked against its variables.
#pragma once

#include <optional>
#include <string>

#include "model/module.h"
#include "onnx/import.h"
#include "sym/evaluate.h"
#include "sym/prove.h"

namespace weft {

struct ModelFile {
  std::string path;  // as given: compiled directories' summary.json names it
  Module module;     // deduced and checked
  // An imported .onnx file: main's weights (by parameter name) and the ONNX graph's input and
  // output names.
  std::optional<ImportedModel> imported;
};

// True for a model file (.wmod, .onnx).
bool is_model_file(const std::string& path);

// Loads the model at `path` (.onnx through the importer with `onnx`'s bounds, which weft must have
// been built with; anything else as .wmod) and checks it. UserError (file:line:col) on a mistake.
ModelFile load_model_file(const std::string& path, SymProver& prover,
                          const OnnxImportOptions& onnx = {});

// UserError unless every name of `binding` is a declared symbolic variable of `m` and its value
// lies within the variable's declared range.
void check_binding(const SymBinding& binding, const Module& m);

}  // namespace weft
