// A row-major shape seen around one of its dims: what the movement operators of the VM's f32 lane
// (slice, split, concat, repeat) walk.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/shape.h"

namespace weft {

// `outer` blocks (the dims before `dim` multiplied), each `extent` runs of `inner` elements (the
// dims after it multiplied).
struct AroundDim {
  int64_t outer = 1, extent = 1, inner = 1;
};
inline AroundDim around_dim(const Shape& s, size_t dim) {
  AroundDim a;
  for (size_t d = 0; d < s.size(); ++d) (d < dim ? a.outer : d == dim ? a.extent : a.inner) *= s[d];
  return a;
}

}  // namespace weft
