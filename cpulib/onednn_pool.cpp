// Pooling (the model operators max_pool, avg_pool and global_avg_pool over [N, C, *spatial]) by
// oneDNN on row-major or channels-last tensors. ONNX's ceil_mode is a longer right padding (the
// library's output extent is the floor form), which padding never wins in a max and an average
// without count_include_pad does not count.

#include "cpulib/onednn.h"
#include "model/model_ops.h"

namespace weft::onednn {

bool pool(OpKind kind, const HostOperand& x, const Attrs& attrs, const F32Destination& into,
          ChannelsLast channels_last) {
  const Shape& x_shape = *x.shape;
  const size_t rank = x_shape.size();
  if (rank < 3 || rank > 5) return false;
  const bool global = kind == OpKind::global_avg_pool;
  const bool ceil_mode = !global && attrs.get_int("ceil_mode") == 1;
  const bool include_pad = kind == OpKind::avg_pool && attrs.get_int("count_include_pad") == 1;
  if (include_pad && ceil_mode) return false;  // the library would count the extra padding
  dnnl::memory::dims strides, kernel_dims, dilations, pad_l, pad_r;
  Shape out_shape = {x_shape[0], x_shape[1]};
  int64_t taps = 1;
  if (global) {  // one window over every spatial dim
    for (size_t i = 2; i < rank; ++i) {
      strides.push_back(1);
      kernel_dims.push_back(x_shape[i]);
      dilations.push_back(0);
      pad_l.push_back(0);
      pad_r.push_back(0);
      out_shape.push_back(1);
      taps *= x_shape[i];
    }
  } else {
    const Windows3 w = concrete_windows(x_shape, attrs.get_list("kernel"), attrs, ceil_mode,
                                        kind == OpKind::max_pool ? "max_pool" : "avg_pool");
    for (size_t i = 3 - (rank - 2); i < 3; ++i) {
      strides.push_back(w.s[i]);
      kernel_dims.push_back(w.k[i]);
      dilations.push_back(w.d[i] - 1);  // oneDNN counts the gaps between taps
      pad_l.push_back(w.pb[i]);
      // The right padding that makes the library's floor extent ours (ceil_mode's last window).
      const int64_t span = (w.k[i] - 1) * w.d[i] + 1;
      pad_r.push_back((w.out[i] - 1) * w.s[i] + span - w.in[i] - w.pb[i]);
      if (pad_r.back() < 0) return false;
      out_shape.push_back(w.out[i]);
    }
    taps = w.k_size();
  }
  const bool x_nhwc = channels_last & operand_channels_last(0);
  const bool y_nhwc = channels_last & kResultChannelsLast;
  WEFT_CHECK(rank == 4 || !channels_last, "a {}-D pooling's tensors are never channels-last", rank);
  const auto algorithm = kind == OpKind::max_pool ? dnnl::algorithm::pooling_max
                         : include_pad            ? dnnl::algorithm::pooling_avg_include_padding
                                                  : dnnl::algorithm::pooling_avg_exclude_padding;
  CacheKey key('p');
  key.add(x_shape).add(strides).add(kernel_dims).add(dilations).add(pad_l).add(pad_r);
  key.add(static_cast<int64_t>(algorithm)).add(x_nhwc ? 1 : 0).add(y_nhwc ? 1 : 0);
  key.add(use_threads_for(static_cast<double>(numel(out_shape)) * static_cast<double>(taps)));
  // The library's fast kernels take one layout for both: a 1x1 result is the same bytes in
  // either, and otherwise x is reordered into the result's first (only where a reader outside the
  // library needs the result row-major).
  const bool one_by_one = numel(out_shape) == out_shape[0] * out_shape[1];
  const bool compute_nhwc = one_by_one ? x_nhwc : y_nhwc;
  const auto src_desc = compute_nhwc ? nhwc_desc(x_shape) : plain_desc(x_shape);
  const auto dst_desc = compute_nhwc ? nhwc_desc(out_shape) : plain_desc(out_shape);
  const Cached* prim = cached(key.str(), [&] {
    dnnl::pooling_v2_forward::desc desc(dnnl::prop_kind::forward_inference, algorithm, src_desc,
                                        dst_desc, strides, kernel_dims, dilations, pad_l, pad_r);
    dnnl::pooling_v2_forward::primitive_desc pd(desc, cpu_engine());
    return Cached{pd, dnnl::pooling_v2_forward(pd)};
  });
  if (!prim) return false;
  std::vector<float> scratch, converted;
  dnnl::memory src =
      operand_memory(x, scratch, prim, 0, x_nhwc ? nhwc_desc(x_shape) : plain_desc(x_shape));
  if (x_nhwc != compute_nhwc) {
    converted.resize(static_cast<size_t>(numel(x_shape)));
    dnnl::memory to(src_desc, cpu_engine(), converted.data());
    dnnl::reorder(src, to).execute(cpu_stream(), src, to);
    src = to;
  }
  dnnl::memory dst = bound_memory(
      prim, 1, [&] { return dst_desc; }, into(out_shape));
  prim->prim.execute(cpu_stream(), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  cpu_stream().wait();
  return true;
}

}  // namespace weft::onednn
