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

std::optional<Tensor<double>> run_on_cpu_library(OpKind kind,
                                                 const std::vector<const Tensor<double>*>& in,
                                                 const Attrs& attrs, const TensorOwners* owners) {
#if WEFT_HAVE_ONEDNN
  // The weights' owner, when it is the tensor given (a caller's owners and tensors agree).
  std::shared_ptr<const Tensor<double>> weights;
  if (owners && owners->size() == in.size() && in.size() == 2 && (*owners)[1] &&
      (*owners)[1]->get() == in[1])
    weights = *(*owners)[1];
  if (kind == OpKind::conv && in.size() == 2) return onednn::conv(*in[0], *in[1], attrs, weights);
  if (kind == OpKind::matmul && in.size() == 2) {
    // A weight matrix has no batch dims of its own (all 1); a matmul of two activations (the
    // attention scores) gains nothing from keeping one of them.
    const Shape& b = in[1]->shape;
    if (b.size() > 2 && std::any_of(b.begin(), b.end() - 2, [](int64_t d) { return d != 1; }))
      weights = nullptr;
    return onednn::matmul(*in[0], *in[1], weights);
  }
#else
  (void)kind;
  (void)in;
  (void)attrs;
  (void)owners;
#endif
  return std::nullopt;
}

}  // namespace weft
