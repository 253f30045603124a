// A read-only view of a host tensor's values in f32 or in f64, for the operators that take either
// (the VM's f32 lane beside its f64 tensors) without a copy.
#pragma once

#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

#include "core/shape.h"
#include "core/tensor.h"

namespace weft {

// Exactly one of `f32` and `f64` is set. `owner` keeps the values alive where the caller has one:
// an operator may key what it prepares from them (a weight in a library's layout) by it.
struct HostOperand {
  const Shape* shape = nullptr;
  const float* f32 = nullptr;
  const double* f64 = nullptr;
  std::shared_ptr<const void> owner;

  // A view of `values` (f32 or f64, by their type).
  template <class T>
  static HostOperand of(const Shape& shape, const T* values,
                        std::shared_ptr<const void> owner = nullptr) {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
    HostOperand o;
    o.shape = &shape;
    if constexpr (std::is_same_v<T, float>)
      o.f32 = values;
    else
      o.f64 = values;
    o.owner = std::move(owner);
    return o;
  }

  int64_t numel() const { return weft::numel(*shape); }
  // Element i as a double (exact from either).
  double at(int64_t i) const { return f32 ? static_cast<double>(f32[i]) : f64[i]; }
  // The values copied into a tensor of T (f32 or f64).
  template <class T>
  Tensor<T> to_tensor() const {
    Tensor<T> t(*shape, T{});
    for (int64_t i = 0; i < t.numel(); ++i) t.data[static_cast<size_t>(i)] = static_cast<T>(at(i));
    return t;
  }
};

// Where an operator writes an f32 result: called once with the result's shape, it returns room
// for that many floats (a caller's planned storage, or a fresh tensor's values).
using F32Destination = std::function<float*(const Shape&)>;

// A fresh tensor as a destination: `F32Destination into = fresh_into(t)` makes `t` the result.
inline F32Destination fresh_into(Tensor<float>& t) {
  return [&t](const Shape& shape) {
    t = Tensor<float>(shape, 0.0f);
    return t.data.data();
  };
}

inline HostOperand operand_of(const Tensor<double>& t) {
  return HostOperand::of(t.shape, t.data.data());
}
inline HostOperand operand_of(const Tensor<float>& t) {
  return HostOperand::of(t.shape, t.data.data());
}

}  // namespace weft
