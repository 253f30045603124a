// NumPy arrays handed from C++ to Python without a copy: the array owns the vector it views.
#pragma once

#include <nanobind/ndarray.h>

#include <vector>

#include "core/shape.h"

namespace weft::python {

using OutputArray = nanobind::ndarray<nanobind::numpy>;

// A NumPy array that owns `data` (moved to the heap; freed with the array), of NumPy type
// `dtype` (T's own by default; bool arrays come as bytes, std::vector<bool> having no data()).
template <class T>
OutputArray owning_array(std::vector<T> data, const Shape& shape,
                         nanobind::dlpack::dtype dtype = nanobind::dtype<T>()) {
  auto* owned = new std::vector<T>(std::move(data));
  nanobind::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  std::vector<size_t> dims(shape.begin(), shape.end());
  return OutputArray(owned->data(), dims.size(), dims.data(), owner, nullptr, dtype);
}

}  // namespace weft::python
