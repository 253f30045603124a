// The channels-last plan of a function's convolutions and poolings and the conversions a library
// refusal needs (exec/channels_last.h).
#include "exec/channels_last.h"

#include <set>
#include <string>

namespace weft {
namespace {

bool is_op(const Binding& b, std::initializer_list<const char*> names) {
  if (b.call.kind != CallKind::op) return false;
  for (const char* name : names)
    if (b.call.callee == name) return true;
  return false;
}

// Operators whose 4-D result the library writes channels-last as readily as row-major.
bool produces_channels_last(const Binding& b) {
  return is_op(b, {"conv", "fused_conv", "max_pool", "avg_pool"});
}

// Whether `b` reads operand `k` channels-last as readily: a convolution's x or residual, a
// pooling's input.
bool reads_channels_last(const Binding& b, size_t k) {
  if (k >= b.call.args.size()) return false;
  return k == 0 ? is_op(b, {"conv", "fused_conv", "max_pool", "avg_pool", "global_avg_pool"})
                : k == 3 && is_op(b, {"fused_conv"});
}

// Copies an [N, C, H, W] tensor between row-major and channels-last order.
void transpose(const float* from, float* to, const Shape& shape, bool into_channels_last) {
  const int64_t n = shape[0], c = shape[1], plane = shape[2] * shape[3];
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < plane; ++p) {
        const int64_t row_major = (i * c + ch) * plane + p, nhwc = (i * plane + p) * c + ch;
        if (into_channels_last)
          to[nhwc] = from[row_major];
        else
          to[row_major] = from[nhwc];
      }
}

}  // namespace

std::vector<ChannelsLast> channels_last_layouts(const Function& f, bool library) {
  if (!library || cpu_library_name().empty()) return {};
  std::vector<const Binding*> bindings;
  for (const Block& block : f.blocks)
    for (const Binding& b : block.bindings) bindings.push_back(&b);
  // The library's 4-d f32 results that only the library reads in its layout. A value read any
  // other way (an if's arms, a callee, another operator, a weight operand) stays row-major.
  std::set<std::string> library_only;
  for (const Binding* b : bindings)
    if (produces_channels_last(*b) && b->type.kind == MTypeKind::tensor &&
        b->type.dtype == DType::f32 && b->type.rank == 4 && b->var != f.result)
      library_only.insert(b->var);
  for (const Binding* b : bindings) {
    const std::vector<std::string> reads = reads_of(b->call);
    for (size_t k = 0; k < reads.size(); ++k)
      if (!reads_channels_last(*b, k)) library_only.erase(reads[k]);
  }
  std::vector<ChannelsLast> layouts(bindings.size(), 0);
  for (size_t i = 0; i < bindings.size(); ++i) {
    const Binding& b = *bindings[i];
    if (library_only.count(b.var)) layouts[i] |= kResultChannelsLast;
    for (int k : {0, 3})
      if (reads_channels_last(b, static_cast<size_t>(k)) &&
          library_only.count(b.call.args[static_cast<size_t>(k)]))
        layouts[i] |= operand_channels_last(k);
  }
  return layouts;
}

Tensor<float> from_channels_last(const HostOperand& operand) {
  Tensor<float> values = operand.to_tensor<float>();
  Tensor<float> out(values.shape, 0.0f);
  transpose(values.data.data(), out.data.data(), values.shape, false);
  return out;
}

Tensor<float> to_channels_last(const Tensor<float>& t) {
  Tensor<float> out(t.shape, 0.0f);
  transpose(t.data.data(), out.data.data(), t.shape, true);
  return out;
}

}  // namespace weft
