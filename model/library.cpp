// The library functions of call_lib and their CPU implementations.
#include "model/library.h"

namespace weft {
namespace {

// Batched GEMM with size-1 batch dims broadcast, accumulated in double.
Tensor<double> gemm(const std::vector<const Tensor<double>*>& in, const Attrs&) {
  const Tensor<double>&a = *in[0], &b = *in[1];
  size_t r = a.shape.size();
  int64_t m = a.shape[r - 2], k = a.shape[r - 1], n = b.shape[r - 1];
  Shape out_shape(r);
  for (size_t i = 0; i + 2 < r; ++i) out_shape[i] = std::max(a.shape[i], b.shape[i]);
  out_shape[r - 2] = m;
  out_shape[r - 1] = n;
  Tensor<double> out(out_shape, 0.0);
  int64_t batches = out.numel() / std::max<int64_t>(m * n, 1);
  std::vector<int64_t> idx(r - 2, 0);
  for (int64_t bi = 0; bi < batches; ++bi) {
    int64_t ao = 0, bo = 0;
    for (size_t i = 0; i + 2 < r; ++i) {
      ao = ao * a.shape[i] + (a.shape[i] == 1 ? 0 : idx[i]);
      bo = bo * b.shape[i] + (b.shape[i] == 1 ? 0 : idx[i]);
    }
    const double* pa = a.data.data() + ao * m * k;
    const double* pb = b.data.data() + bo * k * n;
    double* po = out.data.data() + bi * m * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t p = 0; p < k; ++p) {
        double x = pa[i * k + p];
        for (int64_t j = 0; j < n; ++j) po[i * n + j] += x * pb[p * n + j];
      }
    for (int d = static_cast<int>(r) - 3; d >= 0; --d) {
      if (++idx[static_cast<size_t>(d)] < out_shape[static_cast<size_t>(d)]) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
  return out;
}

}  // namespace

const std::vector<LibFunction>& all_lib_functions() {
  static const std::vector<LibFunction> table = {
      {"cpu.gemm", OpKind::matmul, gemm,
       "[..., m, k] x [..., k, n] -> [..., m, n] on the CPU, accumulated in f64"},
  };
  return table;
}

const LibFunction* lib_function_by_name(std::string_view name) {
  for (const LibFunction& f : all_lib_functions())
    if (name == f.name) return &f;
  return nullptr;
}

}  // namespace weft
