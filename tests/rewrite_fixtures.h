// Rule and module texts shared by the tests of the model rewrite (both searches).
#pragma once

namespace weft::test {

// Rule 0: x w + x v = x (w + v). Rule 1: two matmuls of one input are one matmul of the joined
// weights, split (a multi-result side).
inline constexpr const char* kProjectionRules = R"(rule 0 unverified from hand
input a: [n, m]
input w: [m, k]
input v: [m, k]
source
  t0 = matmul(a, w)
  t1 = matmul(a, v)
  t2 = add(t0, t1)
  output t2
target
  t0 = add(w, v)
  t1 = matmul(a, t0)
  output t1
end

rule 1 unverified from hand
input a: [n, m]
input w: [m, k]
input v: [m, k]
source
  t0 = matmul(a, w)
  t1 = matmul(a, v)
  output t0
  output t1
target
  t0 = concat(w, v, dim=1)
  t1 = matmul(a, t0)
  t2, t3 = split(t1, dim=1, parts=2)
  output t2
  output t3
end
)";

// x w1 + x w2 and exp(a) exp(b), which the default rules make x (w1 + w2) and exp(a + b).
inline constexpr const char* kDistModule = R"(module dist
sym 1 <= n <= 512

fn main(x: f32[n, 64], w1: f32[64, 32], w2: f32[64, 32], a: f32[n, 32], b: f32[n, 32]) -> f32[n, 32] {
  dataflow {
    p = matmul(x, w1)
    q = matmul(x, w2)
    s = add(p, q)
    e1 = exp(a)
    e2 = exp(b)
    m = mul(e1, e2)
    o = add(s, m)
  }
  return o
}
)";

}  // namespace weft::test
