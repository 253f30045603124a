// Which convolution and pooling results the VM keeps channels-last (NHWC storage of
// [N, C, H, W], the layout the CPU library computes convolutions in): those the library alone
// reads, so a chain of convolutions, their fused epilogues and poolings pays no reorder between
// them. Other operators see row-major tensors only.
#pragma once

#include <vector>

#include "core/host_operand.h"
#include "core/tensor.h"
#include "cpulib/cpu_library.h"
#include "model/module.h"

namespace weft {

// Per top-level binding of `f` (blocks in order, as the VM numbers them): the ChannelsLast bits
// of its call. A 4-D f32 result of conv, fused_conv, max_pool or avg_pool is channels-last when
// it is not the function's result and every reader is one of the same function's top level that
// reads it as the library does in either layout: a convolution's x or residual, a pooling's input
// (global_avg_pool's too). Empty unless `library` and weft has a CPU library (these operators
// then run on weft's own code, row-major).
std::vector<ChannelsLast> channels_last_layouts(const Function& f, bool library = true);

// The row-major values of `operand`, a 4-D tensor stored channels-last.
Tensor<float> from_channels_last(const HostOperand& operand);
// `t`'s values stored channels-last.
Tensor<float> to_channels_last(const Tensor<float>& t);

}  // namespace weft
