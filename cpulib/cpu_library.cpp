// The dispatch from operator kinds to the CPU library's implementations (cpulib/onednn_*.cpp).
#include "cpulib/cpu_library.h"

#if WEFT_HAVE_ONEDNN
#include <fmt/format.h>

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

std::optional<Tensor<double>> run_on_cpu_library(OpKind kind,
                                                 const std::vector<const Tensor<double>*>& in,
                                                 const Attrs& attrs) {
#if WEFT_HAVE_ONEDNN
  if (kind == OpKind::conv && in.size() == 2) return onednn::conv(*in[0], *in[1], attrs);
  if (kind == OpKind::matmul && in.size() == 2) return onednn::matmul(*in[0], *in[1]);
#else
  (void)kind;
  (void)in;
  (void)attrs;
#endif
  return std::nullopt;
}

}  // namespace weft
