// The values of a permuted tensor (the model operator `permute`), for any element type: the one
// loop the model operator (f64) and the VM's f32 lane share.
#pragma once

#include <cstdint>
#include <vector>

#include "core/shape.h"

namespace weft {

// `perm` with negative axes counted from the end.
inline std::vector<int64_t> normalized_perm(const std::vector<int64_t>& perm, size_t rank) {
  std::vector<int64_t> p(rank);
  for (size_t i = 0; i < rank; ++i)
    p[i] = perm[i] < 0 ? perm[i] + static_cast<int64_t>(rank) : perm[i];
  return p;
}

// The shape of `shape` permuted by `p` (normalized).
inline Shape permuted_shape(const Shape& shape, const std::vector<int64_t>& p) {
  Shape out(p.size());
  for (size_t i = 0; i < p.size(); ++i) out[i] = shape[static_cast<size_t>(p[i])];
  return out;
}

// out (of permuted_shape(shape, p)) = x (of `shape`) with its dims in the order `p`; From and To
// may differ (the f32 lane reads f64 tensors too).
template <class From, class To>
void permute_values(const From* x, const Shape& shape, const std::vector<int64_t>& p, To* out) {
  const size_t r = shape.size();
  const Shape out_shape = permuted_shape(shape, p);
  const std::vector<int64_t> in_strides = strides_of(shape);
  std::vector<int64_t> idx(r, 0);
  const int64_t n = numel(out_shape);
  for (int64_t o = 0; o < n; ++o) {
    int64_t src = 0;
    for (size_t i = 0; i < r; ++i) src += idx[i] * in_strides[static_cast<size_t>(p[i])];
    out[o] = static_cast<To>(x[src]);
    for (int d = static_cast<int>(r) - 1; d >= 0; --d) {
      if (++idx[static_cast<size_t>(d)] < out_shape[static_cast<size_t>(d)]) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
}

}  // namespace weft
