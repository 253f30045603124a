// A module with one function per device kernel path of the model executor at fixed shapes (its
// storage dtype DT chosen per use): the device executor's tests and the persistent kernel's of
// whole model functions share it.
#pragma once

#include <string>

#include "model/module.h"
#include "model/parser.h"

namespace weft::test {

// One function per device kernel path, at fixed shapes; `DT` is replaced by the storage dtype.
inline constexpr const char* kKernels = R"(module device_kernels
fn unary(x: DT[2, 3, 5]) -> DT[2, 3, 5] {
  dataflow {
    a = exp(x)
    b = tanh(a)
    c = neg(b)
    d = sigmoid(x)
    e = erf(x)
    f = scale(d, factor=0.75)
    g = add(c, f)
    h = add(g, e)
    i = gelu_tanh(h)
  }
  return i
}
fn binary(x: DT[2, 3, 5], y: DT[1, 3, 1], z: DT[2, 1, 5]) -> DT[2, 3, 5] {
  dataflow {
    a = div(x, y)
    b = sub(a, z)
    c = mul(b, z)
    d = where(y, c, x)
    e = abs(d)
    f = pow(e, z)
  }
  return f
}
fn contraction(x: DT[2, 1, 4, 6], y: DT[1, 3, 6, 5]) -> DT[2, 3, 4, 5] {
  dataflow {
    a = matmul(x, y)
  }
  return a
}
fn rows(x: DT[3, 8, 5]) -> tuple(DT[3, 1, 5], DT[3, 2, 5], DT[3, 4, 5], DT[3, 8, 5], DT[3, 8, 5], DT[3, 8, 5], DT[3, 8, 5]) {
  dataflow {
    a = sum(x, dim=1)
    b = mean(x, dim=1, to=2)
    c = max(x, dim=1, to=4)
    d = softmax_safe(x, dim=1)
    e = layer_norm(x, eps=1e-5)
    f = rms_norm(x, dim=1, eps=1e-6)
    g = softmax(x, dim=2)
    t = tuple(a, b, c, d, e, f, g)
  }
  return t
}
fn movement(x: DT[2, 3, 4], y: DT[2, 3, 2]) -> tuple(DT[3, 2, 12], DT[2, 2, 4], DT[2, 3, 6], DT[2, 6, 4], DT[3, 2, 3, 4]) {
  dataflow {
    a = permute(x, perm=[1, 0, 2])
    b = reshape(a, shape=[3, 2, 4])
    c = concat(b, b, b, dim=2)
    d = slice(x, dim=1, start=1, size=2)
    e = concat(x, y, dim=2)
    f = repeat(x, dim=1, times=2)
    g = reshape(x, shape=[1, 2, 3, 4])
    h = expand(g, shape=[3, 1, 1, 1])
    t = tuple(c, d, e, f, h)
  }
  return t
}
fn gathers(table: DT[7, 4], ids: DT[2, 3], x: DT[3, 5, 2]) -> tuple(DT[2, 3, 4], DT[3, 2, 3, 2]) {
  dataflow {
    a = embedding(table, ids)
    b = gather(x, ids, axis=1)
    t = tuple(a, b)
  }
  return t
}
fn index_gathers(x: DT[3, 5, 2], ids: DT[3, 4, 2]) -> tuple(DT[3, 4, 2], DT[3, 4, 2], DT[3, 4, 2]) {
  dataflow {
    e = gather_elements(x, ids, axis=1)
    n = gather_nd(x, ids)
    s = slice(ids, dim=2, start=0, size=1)
    b = gather_nd(x, s, batch_dims=1)
    t = tuple(e, n, b)
  }
  return t
}
fn positions(x: DT[2, 6, 8]) -> tuple(DT[2, 6, 8], DT[2, 3, 8], DT[2, 6, 8], DT[ndim=3], DT[4, 6, 16], DT[3, 7, 9]) {
  dataflow {
    a = rope(x, offset=3, theta=100)
    b = causal_mask(a, offset=1)
    c = softmax_safe(b, dim=2)
    parts = split(x, dim=1, parts=2)
    p = item(parts, index=1)
    d = clip(x, min=-0.5, max=1.25)
    s = slice_steps(x, starts=[-1, 4], ends=[-9223372036854775807, 0], axes=[1, -1], steps=[-2, -3])
    t = tile(x, repeats=[2, 1, 2])
    q = pad(x, pads=[1, 0, -1, 0, 1, 2], value=-0.75)
    r = tuple(c, p, d, s, t, q)
  }
  return r
}
fn masks(x: DT[3, 4], y: DT[1, 4]) -> tuple(bool[3, 4], bool[3, 4], bool[3, 4], bool[3, 4], bool[3, 4], bool[3, 4], bool[3, 4], bool[3, 4], bool[3, 4], bool[3, 4], bool[3, 4], DT[3, 4], DT[3, 4], DT[3, 4], DT[3, 4]) {
  dataflow {
    a = equal(x, x)
    b = less(x, y)
    c = less_equal(y, x)
    d = greater(x, y)
    e = greater_equal(x, y)
    f = logical_and(b, d)
    g = logical_or(b, e)
    h = logical_xor(c, b)
    i = logical_not(f)
    j = is_nan(x)
    k = is_inf(x, detect_negative=0)
    l = maximum(x, y)
    m = minimum(x, y)
    n = cos(x)
    o = sin(x)
    t = tuple(a, b, c, d, e, f, g, h, i, j, k, l, m, n, o)
  }
  return t
}
fn generated(x: DT[2, 3]) -> tuple(f32[2, 3], i64[4], i64[3], f16[2, 3], bool[2, 3]) {
  dataflow {
    f = fill(shape=[2, 3], value=-2.5)
    r = range(start=7, limit=-4, delta=-3)
    d = dims_tensor(values=[2, 3, 7])
    h = cast(x, to=10)
    y = relu(x)
    b = cast(y, to=9)
    t = tuple(f, r, d, h, b)
  }
  return t
}
fn windows(x: DT[2, 4, 7, 6], k: DT[6, 2, 3, 3]) -> tuple(DT[ndim=4], DT[ndim=4], i64[ndim=4], DT[ndim=4], DT[2, 4, 1, 1], DT[2, 4, 1, 1], DT[2, 4, 7, 6]) {
  dataflow {
    c = conv(x, k, strides=[2, 1], pads=[1, 0, 2, 1], dilations=[1, 2], group=2)
    m = max_pool(x, kernel=[2, 3], strides=[2, 2], pads=[1, 1, 1, 0], ceil_mode=1)
    i = max_pool_indices(x, kernel=[2, 3], strides=[2, 2], pads=[1, 1, 1, 0], ceil_mode=1)
    a = avg_pool(x, kernel=[3, 2], strides=[2, 3], pads=[1, 0, 1, 1], ceil_mode=1, count_include_pad=1)
    g = global_avg_pool(x)
    h = global_max_pool(x)
    l = lrn(x, size=3, alpha=1/2, beta=0.75, bias=1.5)
    r = tuple(c, m, i, a, g, h, l)
  }
  return r
}
)";

inline Module kernels_module(const std::string& dtype) {
  std::string text = kKernels;
  for (size_t at; (at = text.find("DT[")) != std::string::npos;) text.replace(at, 2, dtype);
  SymProver prover;
  return parse_module(text, "device_kernels.wmod", prover);
}

}  // namespace weft::test
