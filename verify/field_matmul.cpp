// Field matmul kernels: a portable 128-bit accumulator path and an AVX-512 IFMA path, tiled and
// spread over threads with oneTBB.
#include "verify/field_matmul.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "core/error.h"
#include "core/parallel.h"

namespace weft::ff {
namespace {

std::atomic<bool> g_force_scalar{false};

bool cpu_has_ifma() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512ifma");
  }();
  return has;
}

// Rows [r0, r1) x columns [c0, c1), blocked so that a kKB x kJB panel of B stays in L2 while
// every row streams over it; products (< 2^102) accumulate unreduced in 128 bits.
void tile_scalar(const uint64_t* A, const uint64_t* B, uint64_t* C, int64_t r0, int64_t r1,
                 int64_t c0, int64_t c1, int64_t k, int64_t n, uint64_t m) {
  using u128 = unsigned __int128;
  constexpr int64_t kJB = 256, kKB = 256;
  std::vector<u128> acc(static_cast<size_t>((r1 - r0) * kJB));
  for (int64_t j0 = c0; j0 < c1; j0 += kJB) {
    const int64_t jn = std::min(kJB, c1 - j0);
    std::fill(acc.begin(), acc.end(), u128{0});
    for (int64_t k0 = 0; k0 < k; k0 += kKB) {
      const int64_t k1 = std::min(k, k0 + kKB);
      for (int64_t i = r0; i < r1; ++i) {
        u128* __restrict c = acc.data() + (i - r0) * kJB;
        for (int64_t kk = k0; kk < k1; ++kk) {
          const uint64_t a = A[i * k + kk];
          const uint64_t* __restrict b = B + kk * n + j0;
          for (int64_t j = 0; j < jn; ++j) c[j] += static_cast<u128>(a) * b[j];
        }
      }
    }
    for (int64_t i = r0; i < r1; ++i)
      for (int64_t j = 0; j < jn; ++j)
        C[i * n + j0 + j] = static_cast<uint64_t>(acc[(i - r0) * kJB + j] % m);
  }
}

// IFMA: vpmadd52luq/huq add the low/high 52 bits of 52x52-bit products to 64-bit lanes. Each
// addend is < 2^52, so up to 4096 products per lane fit before a fold into the exact residue.
constexpr int64_t kIfmaChunk = 4096;
constexpr int kRowsPerTile = 4;

__attribute__((target("avx512f,avx512ifma"))) void tile_ifma(const uint64_t* A, const uint64_t* B,
                                                             uint64_t* C, int64_t r0, int64_t r1,
                                                             int64_t c0, int64_t c1, int64_t k,
                                                             int64_t n, uint64_t m) {
  using u128 = unsigned __int128;
  const u128 two52 = static_cast<u128>(1) << 52;
  int64_t i = r0;
  for (; i + kRowsPerTile <= r1; i += kRowsPerTile) {
    int64_t j = c0;
    for (; j + 16 <= c1; j += 16) {
      u128 total[kRowsPerTile][16] = {};
      for (int64_t k0 = 0; k0 < k; k0 += kIfmaChunk) {
        const int64_t k1 = std::min(k, k0 + kIfmaChunk);
        __m512i lo[kRowsPerTile][2], hi[kRowsPerTile][2];
        for (int r = 0; r < kRowsPerTile; ++r)
          for (int v = 0; v < 2; ++v) lo[r][v] = hi[r][v] = _mm512_setzero_si512();
        for (int64_t kk = k0; kk < k1; ++kk) {
          const uint64_t* b = B + kk * n + j;
          const __m512i b0 = _mm512_loadu_si512(b), b1 = _mm512_loadu_si512(b + 8);
          for (int r = 0; r < kRowsPerTile; ++r) {
            const __m512i a = _mm512_set1_epi64(static_cast<long long>(A[(i + r) * k + kk]));
            lo[r][0] = _mm512_madd52lo_epu64(lo[r][0], a, b0);
            hi[r][0] = _mm512_madd52hi_epu64(hi[r][0], a, b0);
            lo[r][1] = _mm512_madd52lo_epu64(lo[r][1], a, b1);
            hi[r][1] = _mm512_madd52hi_epu64(hi[r][1], a, b1);
          }
        }
        alignas(64) uint64_t l[8], h[8];
        for (int r = 0; r < kRowsPerTile; ++r)
          for (int v = 0; v < 2; ++v) {
            _mm512_store_si512(l, lo[r][v]);
            _mm512_store_si512(h, hi[r][v]);
            for (int e = 0; e < 8; ++e)
              total[r][v * 8 + e] += static_cast<u128>(h[e]) * two52 + l[e];
          }
      }
      for (int r = 0; r < kRowsPerTile; ++r)
        for (int e = 0; e < 16; ++e)
          C[(i + r) * n + j + e] = static_cast<uint64_t>(total[r][e] % m);
    }
    if (j < c1) tile_scalar(A, B, C, i, i + kRowsPerTile, j, c1, k, n, m);
  }
  if (i < r1) tile_scalar(A, B, C, i, r1, c0, c1, k, n, m);
}

}  // namespace

const char* matmul_kernel_name() {
  return cpu_has_ifma() && !g_force_scalar.load() ? "avx512-ifma" : "scalar-u128";
}

void set_force_scalar_matmul(bool force) {
  g_force_scalar.store(force);
}

void matmul_mod(const uint64_t* A, const uint64_t* B, uint64_t* C, int64_t rows, int64_t k,
                int64_t n, uint64_t m, int threads) {
  WEFT_CHECK(m < (uint64_t{1} << 52), "modulus {} too large for the field matmul", m);
  if (rows == 0 || n == 0) return;
  if (k == 0) {
    std::fill(C, C + rows * n, uint64_t{0});
    return;
  }
  const bool ifma = cpu_has_ifma() && !g_force_scalar.load();
  auto tile = [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    if (ifma)
      tile_ifma(A, B, C, r0, r1, c0, c1, k, n, m);
    else
      tile_scalar(A, B, C, r0, r1, c0, c1, k, n, m);
  };
  const double work = static_cast<double>(rows) * static_cast<double>(k) * static_cast<double>(n);
  if (threads == 1 || work < 4.0e6) {
    tile(0, rows, 0, n);
    return;
  }
  // Tiles are disjoint blocks of C, so the result is the same for any schedule.
  const int64_t row_grain = kRowsPerTile * 4, col_grain = 256;
  const int64_t row_tiles = (rows + row_grain - 1) / row_grain,
                col_tiles = (n + col_grain - 1) / col_grain;
  parallel_for_index(row_tiles * col_tiles, threads, [&](int64_t t) {
    int64_t r0 = (t / col_tiles) * row_grain, c0 = (t % col_tiles) * col_grain;
    tile(r0, std::min(rows, r0 + row_grain), c0, std::min(n, c0 + col_grain));
  });
}

}  // namespace weft::ff
