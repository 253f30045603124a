// Matmul ([..., M, K] x [..., K, N], batch dims broadcast) by oneDNN on row-major operands.

#include "cpulib/onednn.h"

namespace weft::onednn {

bool matmul(const HostOperand& a, const HostOperand& b, const F32Destination& into) {
  const Shape &a_shape = *a.shape, &b_shape = *b.shape;
  const size_t rank = a_shape.size();
  if (rank < 2 || b_shape.size() != rank || a_shape[rank - 1] != b_shape[rank - 2]) return false;
  Shape out_shape(rank);
  for (size_t i = 0; i + 2 < rank; ++i) {
    if (a_shape[i] != b_shape[i] && a_shape[i] != 1 && b_shape[i] != 1) return false;
    out_shape[i] = a_shape[i] == 1 ? b_shape[i] : a_shape[i];
  }
  out_shape[rank - 2] = a_shape[rank - 2];
  out_shape[rank - 1] = b_shape[rank - 1];
  CacheKey key('m');
  key.add(a_shape).add(b_shape);
  // Before the primitive is built: oneDNN sizes its scratchpad by the threads it is built with.
  const int threads = use_threads_for(2.0 * static_cast<double>(numel(out_shape)) *
                                      static_cast<double>(a_shape[rank - 1]));
  key.add(threads);
  const Cached* prim = cached(key.str(), [&] {
    dnnl::matmul::desc desc(plain_desc(a_shape), plain_desc(b_shape), plain_desc(out_shape));
    dnnl::matmul::primitive_desc pd(desc, cpu_engine());
    return Cached{pd, dnnl::matmul(pd)};
  });
  if (!prim) return false;
  std::vector<float> scratch_a, scratch_b;
  dnnl::memory a_mem = plain_memory(a, scratch_a, prim, 0);
  // Row-major like the primitive: a weight's f32 copy is kept (an f64 one converted once), an
  // f32 operand read as it is.
  dnnl::memory b_mem = b.owner && !b.f32 ? prepared_weights(b, b_shape, plain_desc(b_shape), prim)
                                         : plain_memory(b, scratch_b, prim, 1);
  dnnl::memory y_mem = bound_memory(
      prim, 2, [&] { return plain_desc(out_shape); }, into(out_shape));
  prim->prim.execute(cpu_stream(),
                     {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, y_mem}});
  cpu_stream().wait();
  return true;
}

}  // namespace weft::onednn
