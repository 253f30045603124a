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

template <typename T, typename Stored = T>
nanobind::object typed_array(const Tensor<double>& t) {
  std::vector<Stored> data(t.data.size());
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<Stored>(static_cast<T>(t.data[i]));
  return nanobind::cast(owning_array(std::move(data), t.shape, nanobind::dtype<T>()));
}

// The tensor as a NumPy array: of its model dtype's NumPy type where that is an integer or bool
// (`element`, exec/npz.h), else of f32 (`f32`) or f64.
inline nanobind::object tensor_array(const Tensor<double>& t, bool f32,
                                     NpyElement element = NpyElement::f4) {
  switch (element) {
    case NpyElement::i8:
      return typed_array<int64_t>(t);
    case NpyElement::i4:
      return typed_array<int32_t>(t);
    case NpyElement::i2:
      return typed_array<int16_t>(t);
    case NpyElement::i1:
      return typed_array<int8_t>(t);
    case NpyElement::u1:
      return typed_array<uint8_t>(t);
    case NpyElement::b1:
      return typed_array<bool, uint8_t>(t);
    case NpyElement::f2:
    case NpyElement::f4:
    case NpyElement::f8:
      break;
  }
  if (f32)
    return nanobind::cast(owning_array(std::vector<float>(t.data.begin(), t.data.end()), t.shape));
  return nanobind::cast(owning_array(t.data, t.shape));
}

}  // namespace weft::python
