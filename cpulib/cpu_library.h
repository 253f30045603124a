// The CPU library operators (issue 30): convolution and matmul run by oneDNN in f32 where weft
// was built with it, for the VM. Each call takes operands in f32 (the VM's f32 lane) or f64,
// computes in f32 (the precision the VM stores every f32 result in) and returns f32.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/host_operand.h"
#include "core/tensor.h"
#include "ir/attrs.h"
#include "ir/ops.h"

namespace weft {

// "oneDNN 2.6.3": the library the operators run on; empty when weft was built without one.
std::string cpu_library_name();

// Weights the library keeps prepared for tensors that still live (run_on_cpu_library's owners),
// or 0 without one (tests).
size_t onednn_prepared_weights_kept();

// At most `threads` threads per library call from now on (0, the default: the cores). A call
// uses fewer where its work is small.
void limit_cpu_library_threads(int threads);

// The shared tensors behind operands, one per operand (null where a caller has none); pointers,
// so a caller lists them without touching their counts.
using TensorOwners = std::vector<const std::shared_ptr<const Tensor<double>>*>;

// Which tensors of a 4-D convolution are stored channels-last ([N, C, H, W] as NHWC, the layout
// the library computes in): bit 0 the result, bit 1 + i operand i (x is 0, a fused_conv's
// residual 3). The VM stores a convolution's result so where only convolutions read it
// (exec/channels_last.h); every other operator sees row-major tensors.
using ChannelsLast = uint8_t;
inline constexpr ChannelsLast kResultChannelsLast = 1;
inline constexpr ChannelsLast operand_channels_last(int i) {
  return static_cast<ChannelsLast>(2 << i);
}

// The operators the CPU library may take (it still refuses shapes or attributes it lacks):
// convolutions, matmul and pooling.
inline bool runs_on_cpu_library(OpKind kind) {
  return kind == OpKind::conv || kind == OpKind::fused_conv || kind == OpKind::matmul ||
         kind == OpKind::max_pool || kind == OpKind::avg_pool || kind == OpKind::global_avg_pool;
}

// `kind` applied to `in` with evaluated attributes `attrs` by the CPU library in f32, written
// where `into` says; false when the library does not take the call (as run_on_cpu_library below;
// `into` is then not called). `channels_last`: the layouts of a convolution's tensors.
bool run_on_cpu_library_f32(OpKind kind, const std::vector<HostOperand>& in, const Attrs& attrs,
                            const F32Destination& into, ChannelsLast channels_last = 0);

// `kind` applied to `in` with evaluated attributes `attrs` by the CPU library, or nullopt when
// the library does not take this call (built without one, an operator or attribute it does not
// implement, a shape it refuses): the caller then computes it itself. Operands are checked by
// the caller's shape rules first; the result has the operator's shape. With `owners`, a
// convolution's or matmul's weights (operand 2) are prepared once in the library's layout and
// kept while their tensor lives (a weight of a model run again and again); without, per call.
std::optional<Tensor<double>> run_on_cpu_library(OpKind kind,
                                                 const std::vector<const Tensor<double>*>& in,
                                                 const Attrs& attrs,
                                                 const TensorOwners* owners = nullptr);

}  // namespace weft
