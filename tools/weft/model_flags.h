// The model commands' shared flags: `--bind NAME=VALUE,...` (values for a module's declared
// symbolic variables) and `--bound NAME=N` (an ONNX dim_param's upper bound).
#pragma once

#include <string>
#include <vector>

#include "model/module.h"
#include "onnx/import.h"

namespace weft::cli {

// "b=2,n=16": values for declared symbolic variables of `m` (UserError otherwise).
SymBinding parse_binding(const std::string& text, const Module& m);

// "--bound n=512": an upper bound for the symbolic variable of an ONNX dim_param.
void parse_bound(const std::string& text, OnnxImportOptions& options);
// The --bound flag's help, its default read from OnnxImportOptions.
std::string bound_help();
// The import's notes (ImportedModel::notes), one "note: ..." line each on stderr.
void print_notes(const std::vector<std::string>& notes);

}  // namespace weft::cli
