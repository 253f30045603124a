// Canonical text of a model module (docs/model-format.md); parse_module(print_module(m)) == m.
#pragma once

#include <string>

#include "model/module.h"

namespace weft {

// With `type_comments`, every binding ends in a comment giving its deduced type.
std::string print_module(const Module& module, bool type_comments = true);

}  // namespace weft
