// Dense row-major tensors over any value type, with the box slicing and placing the interpreter
// needs for iterators, accumulators and savers.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/shape.h"

namespace weft {

template <class V>
struct Tensor {
  Shape shape;
  std::vector<V> data;

  Tensor() = default;
  Tensor(Shape s, V fill)
      : shape(std::move(s)), data(static_cast<size_t>(weft::numel(shape)), fill) {}
  Tensor(Shape s, std::vector<V> values) : shape(std::move(s)), data(std::move(values)) {
    WEFT_CHECK(static_cast<int64_t>(data.size()) == weft::numel(shape),
               "tensor of shape {} given {} values", shape_str(shape), data.size());
  }

  int64_t numel() const { return static_cast<int64_t>(data.size()); }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  // Row-major linear offset of a full multi-index.
  int64_t offset(const std::vector<int64_t>& index) const {
    int64_t off = 0;
    for (size_t d = 0; d < shape.size(); ++d) off = off * shape[d] + index[d];
    return off;
  }
  V& at(const std::vector<int64_t>& index) { return data[static_cast<size_t>(offset(index))]; }
  const V& at(const std::vector<int64_t>& index) const {
    return data[static_cast<size_t>(offset(index))];
  }
};

namespace detail {
// Calls fn(src_offset, dst_offset, row_length) for every innermost row of a box of `sizes`
// that starts at `src_start` in a tensor of `src_shape` and at `dst_start` in one of `dst_shape`.
template <class Fn>
void for_each_box_row(const Shape& src_shape, const std::vector<int64_t>& src_start,
                      const Shape& dst_shape, const std::vector<int64_t>& dst_start,
                      const Shape& sizes, Fn&& fn) {
  size_t r = sizes.size();
  WEFT_CHECK(r > 0 && src_shape.size() == r && dst_shape.size() == r && src_start.size() == r &&
                 dst_start.size() == r,
             "box rank mismatch");
  for (size_t d = 0; d < r; ++d)
    WEFT_CHECK(src_start[d] >= 0 && src_start[d] + sizes[d] <= src_shape[d] && dst_start[d] >= 0 &&
                   dst_start[d] + sizes[d] <= dst_shape[d],
               "box out of range at dim {}", d);
  if (weft::numel(sizes) == 0) return;
  auto src_strides = strides_of(src_shape), dst_strides = strides_of(dst_shape);
  std::vector<int64_t> idx(r, 0);  // index within the box; the last dim is handled as a row
  for (;;) {
    int64_t s = 0, t = 0;
    for (size_t d = 0; d < r; ++d) {
      s += (src_start[d] + idx[d]) * src_strides[d];
      t += (dst_start[d] + idx[d]) * dst_strides[d];
    }
    fn(s, t, sizes[r - 1]);
    int d = static_cast<int>(r) - 2;
    for (; d >= 0; --d) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}
}  // namespace detail

// The box of `sizes` starting at `start`.
template <class V>
Tensor<V> slice_box(const Tensor<V>& t, const std::vector<int64_t>& start, const Shape& sizes) {
  Tensor<V> out;
  out.shape = sizes;
  out.data.resize(static_cast<size_t>(weft::numel(sizes)));
  detail::for_each_box_row(t.shape, start, sizes, std::vector<int64_t>(sizes.size(), 0), sizes,
                           [&](int64_t s, int64_t d, int64_t n) {
                             for (int64_t j = 0; j < n; ++j) out.data[d + j] = t.data[s + j];
                           });
  return out;
}

// Elements [begin, begin + length) of one dim, all of every other dim.
template <class V>
Tensor<V> slice_dim(const Tensor<V>& t, int64_t dim, int64_t begin, int64_t length) {
  std::vector<int64_t> start(t.shape.size(), 0);
  Shape sizes = t.shape;
  start[dim] = begin;
  sizes[dim] = length;
  return slice_box(t, start, sizes);
}

// Writes `tile` into `dst` with its first element at `start`.
template <class V>
void place_box(Tensor<V>& dst, const Tensor<V>& tile, const std::vector<int64_t>& start) {
  detail::for_each_box_row(tile.shape, std::vector<int64_t>(tile.shape.size(), 0), dst.shape, start,
                           tile.shape, [&](int64_t s, int64_t d, int64_t n) {
                             for (int64_t j = 0; j < n; ++j) dst.data[d + j] = tile.data[s + j];
                           });
}

// Writes `tile` into `dst` at `offset` along `dim` (all other dims must match).
template <class V>
void place_dim(Tensor<V>& dst, const Tensor<V>& tile, int64_t dim, int64_t offset) {
  std::vector<int64_t> start(dst.shape.size(), 0);
  start[dim] = offset;
  place_box(dst, tile, start);
}

// Elementwise conversion between value types (e.g. the f64 random inputs to f32).
template <class To, class From>
Tensor<To> convert_tensor(const Tensor<From>& t) {
  Tensor<To> out;
  out.shape = t.shape;
  out.data.reserve(t.data.size());
  for (const From& v : t.data) out.data.push_back(static_cast<To>(v));
  return out;
}

}  // namespace weft
