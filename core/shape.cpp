// Printing of shapes.
#include "core/shape.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace weft {

std::string shape_str(const Shape& s) {
  return fmt::format("[{}]", fmt::join(s, ", "));
}

}  // namespace weft
