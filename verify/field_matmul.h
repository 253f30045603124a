// Matrix multiplication over Z_m with deferred reduction: the verifier's hot loop.
#pragma once

#include <cstdint>

namespace weft::ff {

// C = A·B mod m for row-major A [rows, k], B [k, n], C [rows, n] of residues < m < 2^52. Products
// are accumulated unreduced (AVX-512 IFMA 52-bit halves where the CPU has them, else 128-bit
// integers) and reduced once per element, so the result is exact and does not depend on the path,
// the blocking or `threads` (<= 0: all cores; 1: the calling thread only).
void matmul_mod(const uint64_t* A, const uint64_t* B, uint64_t* C, int64_t rows, int64_t k,
                int64_t n, uint64_t m, int threads);

// Which kernel matmul_mod uses on this CPU ("avx512-ifma" or "scalar-u128").
const char* matmul_kernel_name();
// Forces the portable kernel (tests compare both paths).
void set_force_scalar_matmul(bool force);

}  // namespace weft::ff
