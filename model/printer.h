// Canonical text of a model module (docs/model-format.md); parse_module(print_module(m)) == m.
#pragma once

#include <string>

#include "model/module.h"

namespace weft {

// With `type_comments`, every binding ends in a comment giving its deduced type.
std::string print_module(const Module& module, bool type_comments = true);

// "2 functions, 14 bindings, 1 µGraph, 3 symbolic variables, 0 run-time checks": what
// `weft model check` and weft.Model.check report.
std::string module_summary(const Module& module);

}  // namespace weft
