// Convolution (the model operators `conv` and `fused_conv`, 1 to 3 spatial dims, grouped and
// depthwise included) by oneDNN: the library picks its layouts; an input or result in another
// layout (row-major, or channels-last where the VM keeps it so) is reordered per call (by reorder
// primitives built once, through per-thread scratch), the weights once while their tensor lives
// (prepared_weights); a fused_conv's bias, residual and clip are the primitive's bias and
// post-ops (sum, then eltwise: clip, swish).

#include <bit>
#include <cstring>
#include <unordered_map>

#include "cpulib/onednn.h"
#include "model/model_ops.h"

namespace weft::onednn {

namespace {

using dnnl::memory;

memory::desc any_desc(const memory::dims& dims) {
  return memory::desc(dims, memory::data_type::f32, memory::format_tag::any);
}

// The reorder from `from` to `to`, built once per convolution (`key`) and direction: building a
// reorder primitive costs more than running a small one.
void reorder(const std::string& key, const memory& from, const memory& to) {
  const Cached* r = cached(key, [&] {
    dnnl::reorder::primitive_desc pd(from, to);
    return Cached{pd, dnnl::reorder(pd)};
  });
  WEFT_CHECK(r != nullptr, "oneDNN refused a reorder it offered ({})", key);
  r->prim.execute(cpu_stream(), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

// Roles of a convolution's memories (bound_memory): a given tensor's role says its layout too,
// as a role's memory keeps the descriptor it was made with.
enum Role {
  kPlainSrc,
  kBlockedSrc,
  kBlockedDst,
  kPlainDst,
  kBias,
  kPlainResidual,
  kNhwcSrc,
  kNhwcDst,
  kNhwcResidual
};

// A memory of `desc` over this thread's scratch buffer for `role` (grown as needed and kept): the
// blocked copies a convolution needs per call, without an allocation per call.
memory scratch_memory(const Cached* prim, Role role, const memory::desc& desc) {
  thread_local std::vector<float> buffers[2];
  std::vector<float>& buffer = buffers[role == kBlockedSrc ? 0 : 1];
  const size_t floats = (desc.get_size() + sizeof(float) - 1) / sizeof(float);
  if (buffer.size() < floats) buffer.resize(floats);
  return bound_memory(
      prim, role, [&] { return desc; }, buffer.data());
}

// The post-ops of `epilogue`: the residual summed into the destination, then the clip (a relu
// where it is one: the library's most common form).
dnnl::primitive_attr epilogue_attr(const ConvEpilogue* epilogue) {
  dnnl::primitive_attr attr;
  if (!epilogue) return attr;
  dnnl::post_ops ops;
  if (epilogue->residual.shape) ops.append_sum(1.0f);
  if (epilogue->clip) {
    if (epilogue->lo == 0 && epilogue->hi >= 1e18)
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    else
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, static_cast<float>(epilogue->lo),
                         static_cast<float>(epilogue->hi));
  }
  if (epilogue->silu) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_swish, 1.0f, 0.0f);
  attr.set_post_ops(ops);
  return attr;
}

}  // namespace

bool conv(const HostOperand& x, const HostOperand& weight, const Attrs& attrs,
          const F32Destination& into, const ConvEpilogue* epilogue, ChannelsLast channels_last) {
  const int64_t group = attrs.get_int("group");
  const Shape &x_shape = *x.shape, &w_shape = *weight.shape;
  const size_t rank = x_shape.size();
  if (rank < 3 || rank > 5 || w_shape.size() != rank || group < 1) return false;
  const int64_t n = x_shape[0], c = x_shape[1], m = w_shape[0], cg = w_shape[1];
  if (c != cg * group || m % group != 0) return false;  // the caller's code reports it
  const Windows3 w =
      concrete_windows(x_shape, {w_shape.begin() + 2, w_shape.end()}, attrs, false, "conv");
  // Windows3 pads the spatial dims to three at the front.
  const size_t spatial = rank - 2, first = 3 - spatial;
  memory::dims strides, dilations, pad_l, pad_r;
  Shape out_shape = {n, m};
  for (size_t i = first; i < 3; ++i) {
    strides.push_back(w.s[i]);
    dilations.push_back(w.d[i] - 1);  // oneDNN counts the gaps between taps
    pad_l.push_back(w.pb[i]);
    pad_r.push_back(w.pe[i]);
    out_shape.push_back(w.out[i]);
  }
  // [M, C/g, *k] is [g, M/g, C/g, *k] in the same memory.
  Shape weight_shape = w_shape;
  if (group > 1) {
    weight_shape[0] = m / group;
    weight_shape.insert(weight_shape.begin(), group);
  }
  const memory::dims x_dims(x_shape.begin(), x_shape.end());
  const memory::dims w_dims(weight_shape.begin(), weight_shape.end());
  const memory::dims y_dims(out_shape.begin(), out_shape.end());
  CacheKey key('c');
  key.add(x_shape).add(weight_shape).add(strides).add(dilations).add(pad_l).add(pad_r);
  // Before the primitive is built: oneDNN sizes its scratchpad by the threads it is built with.
  const int threads = use_threads_for(2.0 * static_cast<double>(numel(out_shape)) *
                                      static_cast<double>(cg) * static_cast<double>(w.k_size()));
  key.add(threads);
  if (epilogue) {
    if (numel(*epilogue->bias.shape) != m ||
        (epilogue->residual.shape && *epilogue->residual.shape != out_shape))
      return false;  // the caller's code reports it
    const float lo = epilogue->clip ? static_cast<float>(epilogue->lo) : 0.0f;
    const float hi = epilogue->clip ? static_cast<float>(epilogue->hi) : 0.0f;
    key.add(epilogue->residual.shape ? 1 : 0).add(epilogue->clip ? 1 : 0);
    key.add(epilogue->silu ? 1 : 0);
    key.add(static_cast<int64_t>(std::bit_cast<uint32_t>(lo)));
    key.add(static_cast<int64_t>(std::bit_cast<uint32_t>(hi)));
  }
  const Cached* prim = cached(key.str(), [&] {
    auto desc = epilogue
                    ? dnnl::convolution_forward::desc(
                          dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                          any_desc(x_dims), any_desc(w_dims), plain_desc({m}), any_desc(y_dims),
                          strides, dilations, pad_l, pad_r)
                    : dnnl::convolution_forward::desc(
                          dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                          any_desc(x_dims), any_desc(w_dims), any_desc(y_dims), strides, dilations,
                          pad_l, pad_r);
    dnnl::convolution_forward::primitive_desc pd(desc, epilogue_attr(epilogue), cpu_engine());
    Cached c{pd, dnnl::convolution_forward(pd), pd.src_desc() == plain_desc(x_shape),
             pd.dst_desc() == plain_desc(out_shape)};
    if (rank == 4) {
      c.nhwc_src = pd.src_desc() == nhwc_desc(x_shape);
      c.nhwc_dst = pd.dst_desc() == nhwc_desc(out_shape);
    }
    return c;
  });
  if (!prim) return false;
  const bool x_nhwc = channels_last & operand_channels_last(0);
  const bool y_nhwc = channels_last & kResultChannelsLast;
  const bool r_nhwc = channels_last & operand_channels_last(3);
  WEFT_CHECK(rank == 4 || !channels_last, "a {}-D convolution's tensors are never channels-last",
             rank);
  // A layout's reorders are keyed by it too.
  const std::string layouts = {x_nhwc ? 'n' : 'p', y_nhwc ? 'n' : 'p', r_nhwc ? 'n' : 'p'};

  std::vector<float> scratch;
  memory src = operand_memory(x, scratch, prim, x_nhwc ? kNhwcSrc : kPlainSrc,
                              x_nhwc ? nhwc_desc(x_shape) : plain_desc(x_shape));
  if (!(x_nhwc ? prim->nhwc_src : prim->plain_src)) {
    memory blocked = scratch_memory(prim, kBlockedSrc, prim->pd.src_desc());
    reorder(key.str() + "s" + layouts, src, blocked);
    src = blocked;
  }
  memory wts = prepared_weights(weight, weight_shape, prim->pd.weights_desc(), prim);
  memory y_mem = bound_memory(
      prim, y_nhwc ? kNhwcDst : kPlainDst,
      [&] { return y_nhwc ? nhwc_desc(out_shape) : plain_desc(out_shape); }, into(out_shape));
  // Straight into the result where the library's layout is the result's, else through its own.
  const bool direct_dst = y_nhwc ? prim->nhwc_dst : prim->plain_dst;
  memory dst = direct_dst ? y_mem : scratch_memory(prim, kBlockedDst, prim->pd.dst_desc());
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wts}, {DNNL_ARG_DST, dst}};
  std::vector<float> bias_scratch, residual_scratch;
  if (epilogue) {
    const Shape bias_shape = {m};  // the bias's [1, M, 1, ...] values as the library's [M]
    HostOperand bias = epilogue->bias;
    bias.shape = &bias_shape;
    args[DNNL_ARG_BIAS] = plain_memory(bias, bias_scratch, prim, kBias);
    // The sum post-op adds what the destination holds: the residual, in the library's layout.
    if (epilogue->residual.shape) {
      memory residual = operand_memory(epilogue->residual, residual_scratch, prim,
                                       r_nhwc ? kNhwcResidual : kPlainResidual,
                                       r_nhwc ? nhwc_desc(out_shape) : plain_desc(out_shape));
      if (direct_dst && r_nhwc == y_nhwc) {
        if (residual.get_data_handle() != y_mem.get_data_handle())
          std::memmove(y_mem.get_data_handle(), residual.get_data_handle(),
                       static_cast<size_t>(numel(out_shape)) * sizeof(float));
      } else {
        reorder(key.str() + "r" + layouts, residual, dst);
      }
    }
  }
  prim->prim.execute(cpu_stream(), args);
  if (!direct_dst) reorder(key.str() + "d" + layouts, dst, y_mem);
  cpu_stream().wait();
  return true;
}

}  // namespace weft::onednn
