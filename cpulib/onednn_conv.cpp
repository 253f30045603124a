// Convolution (the model operator `conv`, 1 to 3 spatial dims, grouped and depthwise included)
// by oneDNN: the library picks its blocked layouts; the input is reordered into its layout per
// call, the weights once while their tensor lives (prepared_weights).
#include <fmt/format.h>

#include "cpulib/onednn.h"
#include "model/model_ops.h"

namespace weft::onednn {

namespace {

using dnnl::memory;

memory::desc any_desc(const memory::dims& dims) {
  return memory::desc(dims, memory::data_type::f32, memory::format_tag::any);
}

// `from` (a handle) in the layout `to_desc` asks for: itself where they agree, else a reordered
// copy.
memory in_layout(memory from, const memory::desc& to_desc) {
  if (from.get_desc() == to_desc) return from;
  memory to(to_desc, cpu_engine());
  dnnl::reorder(from, to).execute(cpu_stream(), from, to);
  return to;
}

}  // namespace

std::optional<Tensor<double>> conv(const Tensor<double>& x, const Tensor<double>& weight,
                                   const Attrs& attrs,
                                   const std::shared_ptr<const Tensor<double>>& weights) {
  const int64_t group = attrs.get_int("group");
  const size_t rank = x.shape.size();
  if (rank < 3 || rank > 5 || weight.shape.size() != rank || group < 1) return std::nullopt;
  const int64_t n = x.shape[0], c = x.shape[1], m = weight.shape[0], cg = weight.shape[1];
  if (c != cg * group || m % group != 0) return std::nullopt;  // the caller's code reports it
  const Windows3 w = concrete_windows(x.shape, {weight.shape.begin() + 2, weight.shape.end()},
                                      attrs, false, "conv");
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
  Shape weight_shape = weight.shape;
  if (group > 1) {
    weight_shape[0] = m / group;
    weight_shape.insert(weight_shape.begin(), group);
  }
  const memory::dims x_dims(x.shape.begin(), x.shape.end());
  const memory::dims w_dims(weight_shape.begin(), weight_shape.end());
  const memory::dims y_dims(out_shape.begin(), out_shape.end());
  const std::string key =
      fmt::format("conv {} {} {} {} {} {}", shape_str(x.shape), shape_str(weight_shape),
                  fmt::join(strides, ","), fmt::join(dilations, ","), fmt::join(pad_l, ","),
                  fmt::join(pad_r, ","));
  // Before the primitive is built: oneDNN sizes its scratchpad by the threads it is built with.
  const int threads = use_threads_for(2.0 * static_cast<double>(numel(out_shape)) *
                                      static_cast<double>(cg) * static_cast<double>(w.k_size()));
  const Cached* prim = cached(fmt::format("{} t{}", key, threads), [&] {
    dnnl::convolution_forward::desc desc(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, any_desc(x_dims),
        any_desc(w_dims), any_desc(y_dims), strides, dilations, pad_l, pad_r);
    dnnl::convolution_forward::primitive_desc pd(desc, cpu_engine());
    return Cached{pd, dnnl::convolution_forward(pd)};
  });
  if (!prim) return std::nullopt;

  std::vector<float> x32(static_cast<size_t>(x.numel()));
  to_f32(x.data.data(), x32.data(), x.numel());
  memory x_mem(plain_desc(x.shape), cpu_engine(), x32.data());
  memory src = in_layout(x_mem, prim->pd.src_desc());
  memory wts = prepared_weights(weight, weight_shape, prim->pd.weights_desc(), prim, weights);
  memory dst(prim->pd.dst_desc(), cpu_engine());
  prim->prim.execute(cpu_stream(),
                     {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wts}, {DNNL_ARG_DST, dst}});
  std::vector<float> y32(static_cast<size_t>(numel(out_shape)));
  memory y_mem(plain_desc(out_shape), cpu_engine(), y32.data());
  if (dst.get_desc() == y_mem.get_desc())
    y_mem = dst;
  else
    dnnl::reorder(dst, y_mem).execute(cpu_stream(), dst, y_mem);
  cpu_stream().wait();
  Tensor<double> out(out_shape, 0.0);
  to_f64(static_cast<const float*>(y_mem.get_data_handle()), out.data.data(), out.numel());
  return out;
}

}  // namespace weft::onednn
