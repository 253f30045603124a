// The dispatch from operator kinds to the CPU library's implementations (cpulib/onednn_*.cpp).
#include "cpulib/cpu_library.h"

#if WEFT_HAVE_ONEDNN
#include <fmt/format.h>

#include <algorithm>

#include "cpulib/onednn.h"
#endif

namespace weft {

std::string cpu_library_name() {
#if WEFT_HAVE_ONEDNN
  const dnnl_version_t* v = dnnl_version();
  return fmt::format("oneDNN {}.{}.{}", v->major, v->minor, v->patch);
#else
  return "";
#endif
}

void limit_cpu_library_threads(int threads) {
#if WEFT_HAVE_ONEDNN
  onednn::set_thread_limit(threads);
#else
  (void)threads;
#endif
}

size_t onednn_prepared_weights_kept() {
#if WEFT_HAVE_ONEDNN
  return onednn::prepared_weights_kept();
#else
  return 0;
#endif
}

bool run_on_cpu_library_f32(OpKind kind, const std::vector<HostOperand>& in, const Attrs& attrs,
                            const F32Destination& into, ChannelsLast channels_last) {
#if WEFT_HAVE_ONEDNN
  if (kind == OpKind::fused_conv && (in.size() == 3 || in.size() == 4)) {
    onednn::ConvEpilogue epilogue{.bias = in[2], .residual = in.size() > 3 ? in[3] : HostOperand{}};
    const Rational lo = attrs.get_rational("min"), hi = attrs.get_rational("max");
    // The bounds' defaults (+-2^62) clip nothing.
    epilogue.clip = lo != Rational(-(int64_t{1} << 62)) || hi != Rational(int64_t{1} << 62);
    epilogue.lo = lo.to_double();
    epilogue.hi = hi.to_double();
    epilogue.silu = attrs.get_int("silu") == 1;
    return onednn::conv(in[0], in[1], attrs, into, &epilogue, channels_last);
  }
  if ((kind == OpKind::max_pool || kind == OpKind::avg_pool || kind == OpKind::global_avg_pool) &&
      in.size() == 1)
    return onednn::pool(kind, in[0], attrs, into, channels_last);
  if (in.size() != 2) return false;
  if (kind == OpKind::conv) return onednn::conv(in[0], in[1], attrs, into, nullptr, channels_last);
  if (kind == OpKind::matmul) {
    // A weight matrix has no batch dims of its own (all 1); a matmul of two activations (the
    // attention scores) gains nothing from keeping one of them.
    const Shape& b = *in[1].shape;
    HostOperand weights = in[1];
    if (b.size() > 2 && std::any_of(b.begin(), b.end() - 2, [](int64_t d) { return d != 1; }))
      weights.owner = nullptr;
    return onednn::matmul(in[0], weights, into);
  }
#else
  (void)kind;
  (void)in;
  (void)attrs;
  (void)into;
  (void)channels_last;
#endif
  return false;
}

std::optional<Tensor<double>> run_on_cpu_library(OpKind kind,
                                                 const std::vector<const Tensor<double>*>& in,
                                                 const Attrs& attrs, const TensorOwners* owners) {
  std::vector<HostOperand> operands;
  for (size_t i = 0; i < in.size(); ++i) {
    HostOperand o = operand_of(*in[i]);
    // The owner, when it is the tensor given (a caller's owners and tensors agree).
    if (owners && owners->size() == in.size() && (*owners)[i] && (*owners)[i]->get() == in[i])
      o.owner = *(*owners)[i];
    operands.push_back(std::move(o));
  }
  Tensor<float> out;
  if (!run_on_cpu_library_f32(kind, operands, attrs, fresh_into(out))) return std::nullopt;
  return Tensor<double>(out.shape, std::vector<double>(out.data.begin(), out.data.end()));
}

}  // namespace weft
