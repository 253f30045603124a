// Driver: checking a µGraph against a target's validity rules, every violation located, and a
// one-line summary of a valid program (what `weft check` and Program.check print).
#pragma once

#include <string>
#include <vector>

#include "core/error.h"
#include "core/target.h"
#include "ir/graph.h"

namespace weft {

struct CheckReport {
  // Every violation, each located: one about the program as a whole (an empty program has no
  // statement to point at) at the start of `file`.
  std::vector<UserError> violations;
  // "2 inputs, 1 output, 1 graph-defined kernel (grid 96x1x1, loop 16, 56.2 KiB shared memory on
  // h100)"; empty when there are violations.
  std::string summary;
};

CheckReport check_program(const Graph& g, const Target& target, const std::string& file);

}  // namespace weft
