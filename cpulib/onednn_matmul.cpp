// Matmul ([..., M, K] x [..., K, N], batch dims broadcast) by oneDNN on row-major operands.
#include <fmt/format.h>

#include "cpulib/onednn.h"

namespace weft::onednn {

std::optional<Tensor<double>> matmul(const Tensor<double>& a, const Tensor<double>& b,
                                     const std::shared_ptr<const Tensor<double>>& weights) {
  const size_t rank = a.shape.size();
  if (rank < 2 || b.shape.size() != rank || a.shape[rank - 1] != b.shape[rank - 2])
    return std::nullopt;
  Shape out_shape(rank);
  for (size_t i = 0; i + 2 < rank; ++i) {
    if (a.shape[i] != b.shape[i] && a.shape[i] != 1 && b.shape[i] != 1) return std::nullopt;
    out_shape[i] = a.shape[i] == 1 ? b.shape[i] : a.shape[i];
  }
  out_shape[rank - 2] = a.shape[rank - 2];
  out_shape[rank - 1] = b.shape[rank - 1];
  const std::string key = fmt::format("matmul {} {}", shape_str(a.shape), shape_str(b.shape));
  // Before the primitive is built: oneDNN sizes its scratchpad by the threads it is built with.
  const int threads = use_threads_for(2.0 * static_cast<double>(numel(out_shape)) *
                                      static_cast<double>(a.shape[rank - 1]));
  const Cached* prim = cached(fmt::format("{} t{}", key, threads), [&] {
    dnnl::matmul::desc desc(plain_desc(a.shape), plain_desc(b.shape), plain_desc(out_shape));
    dnnl::matmul::primitive_desc pd(desc, cpu_engine());
    return Cached{pd, dnnl::matmul(pd)};
  });
  if (!prim) return std::nullopt;
  std::vector<float> a32(a.data.size());
  std::vector<float> y32(static_cast<size_t>(numel(out_shape)));
  to_f32(a.data.data(), a32.data(), a.numel());
  dnnl::memory a_mem(plain_desc(a.shape), cpu_engine(), a32.data());
  // Row-major like the primitive: only the f32 copy is kept.
  dnnl::memory b_mem = prepared_weights(b, b.shape, plain_desc(b.shape), prim, weights);
  dnnl::memory y_mem(plain_desc(out_shape), cpu_engine(), y32.data());
  prim->prim.execute(cpu_stream(),
                     {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, y_mem}});
  cpu_stream().wait();
  Tensor<double> out(out_shape, 0.0);
  to_f64(y32.data(), out.data.data(), out.numel());
  return out;
}

}  // namespace weft::onednn
