// The model compile's fuse step (issue 30): a convolution and the elementwise epilogue that
// follows it (bias add, residual add, a clip or relu spelled in any chain of relu, neg, shift,
// scale and clip) become one `fused_conv`, which the CPU library runs as one call with post-ops.
#pragma once

#include <string>
#include <vector>

#include "model/module.h"

namespace weft {

// One fusion made: the function, the convolution's binding, the binding the fused_conv now
// defines (the epilogue's last), and how many bindings it replaced.
struct ConvFusion {
  std::string function, conv, result;
  int bindings = 0;
};

struct FuseResult {
  Module module;
  std::vector<ConvFusion> fusions;
};

// Every f32 `y = conv(x, w)` of a dataflow block whose result is read only by `add(y, bias)`
// (bias [1, M, 1, ...]), optionally then by `add(_, residual)` (residual of y's type), then by a
// SiLU (`silu`, or `mul` of the value and its `sigmoid`) or by a chain of unary operators that
// together clip to [lo, hi] (lo or hi may be absent), each intermediate read by the next alone: one
// fused_conv binding where the chain's last was, under its name, so readers are untouched. The
// module's functions are otherwise unchanged.
FuseResult fuse_conv_epilogues(const Module& module);

}  // namespace weft
