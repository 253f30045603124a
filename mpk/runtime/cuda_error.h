// The mega-kernel's CUDA calls (built with the toolkit only): a failed call is a UserError naming
// what failed, with CUDA's error string and name.
#pragma once

#ifdef WEFT_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <string>

#include "core/error.h"

namespace weft {

inline void check(cudaError_t e, const std::string& what) {
  if (e != cudaSuccess)
    throw UserError(fmt::format("{}: {} ({})", what, cudaGetErrorString(e), cudaGetErrorName(e)));
}

}  // namespace weft
#endif
