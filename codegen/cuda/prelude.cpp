// The prelude text of generated CUDA units (see prelude.h): codegen/cuda/device/prelude.cuh and the
// files it includes, embedded at build time.
#include "codegen/cuda/prelude.h"

#include "core/embedded_files.h"

namespace weft {

const std::string& cuda_prelude() {
  static const std::string text = expand_embedded("codegen/cuda/device/prelude.cuh");
  return text;
}

}  // namespace weft
