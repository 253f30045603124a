// NumPy arrays handed from C++ to Python without a copy: the array owns the vector it views.
#pragma once

#include <nanobind/ndarray.h>

#include <vector>

#include "core/shape.h"

namespace weft::python {

using OutputArray = nanobind::ndarray<nanobind::numpy>;

// A NumPy array that owns `data` (moved to the heap; freed with the array).
template <class T>
OutputArray owning_array(std::vector<T> data, const Shape& shape) {
  auto* owned = new std::vector<T>(std::move(data));
  nanobind::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  std::vector<size_t> dims(shape.begin(), shape.end());
  return OutputArray(owned->data(), dims.size(), dims.data(), owner, nullptr, nanobind::dtype<T>());
}

}  // namespace weft::python
