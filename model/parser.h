// Parser of the .wmod text format (docs/model-format.md) into a deduced, well-formed Module.
#pragma once

#include <string>
#include <string_view>

#include "model/module.h"

namespace weft {

// Parses one module's text and deduces its types (deduce_module). µGraphs named by path are
// read relative to `base_dir` (empty: the working directory). Every mistake is a UserError at
// `filename`:line:col.
Module parse_module(std::string_view text, const std::string& filename, SymProver& prover,
                    const std::string& base_dir = {});

// Reads and parses a .wmod file (core/source_file's checks), µGraph paths relative to its folder.
Module load_module(const std::string& path, SymProver& prover);

}  // namespace weft
