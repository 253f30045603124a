// CUDA backend, the prelude of every generated unit: device primitives with a real CUDA
// implementation and a host-emulation one (std::threads per block) behind the same names.
#pragma once

#include <string>

namespace weft {

// The text put at the top of every generated .cu file: codegen/cuda/device/prelude.cuh with
// cuda.cuh and emulation.cuh inlined. Generated code uses only the weft_* names defined there
// (thread and block indices, barriers, shared memory, f16/bf16 loads and stores, warp shuffles,
// cp.async, ldmatrix, mma.sync, the library GEMM and kernel launches), so the same source compiles
// with nvcc and, with -DWEFT_HOST_EMULATION as C++20, on the host.
const std::string& cuda_prelude();

}  // namespace weft
