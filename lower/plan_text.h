// The kernel plan's text form: print_plan writes it, parse_plan reads it back exactly.
#pragma once

#include <string>
#include <string_view>

#include "lower/plan.h"

namespace weft {

std::string print_plan(const ProgramPlan& plan);
// Throws UserError (with `file` and the line) on malformed text. parse_plan(print_plan(p)) == p.
ProgramPlan parse_plan(std::string_view text, const std::string& file = "<plan>");

}  // namespace weft
