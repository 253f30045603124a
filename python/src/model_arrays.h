// Model arrays between NumPy and weft: a C-contiguous f64 array (and whether it came with an
// integer dtype) as an .npz entry would be (exec/npz.h), and a tensor back as a NumPy array.
#pragma once

#include <nanobind/ndarray.h>

#include <vector>

#include "exec/npz.h"
#include "python/src/arrays.h"

namespace weft::python {

using InputF64 = nanobind::ndarray<const double, nanobind::c_contig, nanobind::device::cpu>;

inline NpyArray npy_array(const InputF64& array, bool integral) {
  NpyArray a;
  a.integral = integral;
  Shape shape;
  for (size_t d = 0; d < array.ndim(); ++d) shape.push_back(static_cast<int64_t>(array.shape(d)));
  a.tensor = Tensor<double>(shape, std::vector<double>(array.data(), array.data() + array.size()));
  return a;
}

// The tensor as a NumPy array of f32 (`f32`) or f64.
inline nanobind::object tensor_array(const Tensor<double>& t, bool f32) {
  if (f32)
    return nanobind::cast(owning_array(std::vector<float>(t.data.begin(), t.data.end()), t.shape));
  return nanobind::cast(owning_array(t.data, t.shape));
}

}  // namespace weft::python
