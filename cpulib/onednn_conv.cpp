// Convolution (the model operator `conv`, 1 to 3 spatial dims, grouped and depthwise included)
// by oneDNN: the library picks its blocked layouts; the input and the result are reordered per
// call (by reorder primitives built once, through per-thread scratch), the weights once while
// their tensor lives (prepared_weights).

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

// Roles of a convolution's memories (bound_memory).
enum Role { kPlainSrc, kBlockedSrc, kBlockedDst, kPlainDst };

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

}  // namespace

bool conv(const HostOperand& x, const HostOperand& weight, const Attrs& attrs,
          const F32Destination& into) {
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
  const Cached* prim = cached(key.str(), [&] {
    dnnl::convolution_forward::desc desc(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, any_desc(x_dims),
        any_desc(w_dims), any_desc(y_dims), strides, dilations, pad_l, pad_r);
    dnnl::convolution_forward::primitive_desc pd(desc, cpu_engine());
    return Cached{pd, dnnl::convolution_forward(pd), pd.src_desc() == plain_desc(x_shape),
                  pd.dst_desc() == plain_desc(out_shape)};
  });
  if (!prim) return false;

  std::vector<float> scratch;
  memory src = plain_memory(x, scratch, prim, kPlainSrc);
  if (!prim->plain_src) {
    memory blocked = scratch_memory(prim, kBlockedSrc, prim->pd.src_desc());
    reorder(key.str() + "s", src, blocked);
    src = blocked;
  }
  memory wts = prepared_weights(weight, weight_shape, prim->pd.weights_desc(), prim);
  memory y_mem = bound_memory(
      prim, kPlainDst, [&] { return plain_desc(out_shape); }, into(out_shape));
  // Straight into the result where the library's layout is row-major, else through its own.
  memory dst = prim->plain_dst ? y_mem : scratch_memory(prim, kBlockedDst, prim->pd.dst_desc());
  prim->prim.execute(cpu_stream(),
                     {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wts}, {DNNL_ARG_DST, dst}});
  if (!prim->plain_dst) reorder(key.str() + "d", dst, y_mem);
  cpu_stream().wait();
  return true;
}

}  // namespace weft::onednn
