// The prelude text of generated CUDA units (see prelude.h).
#include "codegen/cuda/prelude.h"

namespace weft {

const char* cuda_prelude() {
  return R"WEFT(#include <math.h>
#include <stdint.h>
#include <string.h>

#if !defined(__CUDACC__) && !defined(WEFT_HOST_EMULATION)
#error "compile with nvcc, or as C++20 with -DWEFT_HOST_EMULATION"
#endif

#if defined(__CUDACC__) && !defined(WEFT_HOST_EMULATION)
// ---------------------------------------------------------------- CUDA
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#define WEFT_DEV __device__ __forceinline__
#define WEFT_KERNEL(threads) __global__ void __launch_bounds__(threads)
#define WEFT_UNROLL _Pragma("unroll")
typedef __half weft_f16;
typedef __nv_bfloat16 weft_bf16;

extern __shared__ __align__(128) unsigned char weft_smem[];
WEFT_DEV unsigned char* weft_smem_base() { return weft_smem; }
WEFT_DEV int weft_tid() { return static_cast<int>(threadIdx.x); }
WEFT_DEV int weft_bid_x() { return static_cast<int>(blockIdx.x); }
WEFT_DEV int weft_bid_y() { return static_cast<int>(blockIdx.y); }
WEFT_DEV int weft_bid_z() { return static_cast<int>(blockIdx.z); }
WEFT_DEV int64_t weft_gtid() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
WEFT_DEV int64_t weft_gthreads() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }
WEFT_DEV void weft_sync() { __syncthreads(); }

WEFT_DEV float weft_ld(const float* p) { return *p; }
WEFT_DEV float weft_ld(const weft_f16* p) { return __half2float(*p); }
WEFT_DEV float weft_ld(const weft_bf16* p) { return __bfloat162float(*p); }
WEFT_DEV void weft_st(float* p, float v) { *p = v; }
WEFT_DEV void weft_st(weft_f16* p, float v) { *p = __float2half_rn(v); }
WEFT_DEV void weft_st(weft_bf16* p, float v) { *p = __float2bfloat16_rn(v); }

WEFT_DEV float weft_shfl_xor(float v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask); }

WEFT_DEV void weft_copy16(void* dst, const void* src) {
  *static_cast<uint4*>(dst) = *static_cast<const uint4*>(src);
}
// 16-byte global-to-shared copy that bypasses registers (sm_80+); a plain copy before.
WEFT_DEV void weft_cp_async16(void* smem_dst, const void* gmem_src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem_src));
#else
  weft_copy16(smem_dst, gmem_src);
#endif
}
WEFT_DEV void weft_cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
template <int N>
WEFT_DEV void weft_cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

WEFT_DEV void weft_ldmatrix_x4(uint32_t* r, const void* p) {
  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(s));
}
WEFT_DEV void weft_ldmatrix_x2_trans(uint32_t* r, const void* p) {
  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(s));
}
WEFT_DEV void weft_mma_f16(float* d, const uint32_t* a, const uint32_t* b) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
WEFT_DEV void weft_mma_bf16(float* d, const uint32_t* a, const uint32_t* b) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Library matmul: row-major C = A x B is column-major C^T = B^T x A^T. One handle per process,
// created on first use; f32 accumulation whatever the storage type.
[[maybe_unused]] static inline cublasHandle_t weft_cublas() {
  static cublasHandle_t handle = nullptr;
  if (handle == nullptr && cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) handle = nullptr;
  return handle;
}
[[maybe_unused]] static inline int weft_gemm(int dtype, int64_t m, int64_t n, int64_t k, const void* a,
                            int64_t stride_a, const void* b, int64_t stride_b, void* c,
                            int64_t stride_c, int64_t batch, void* stream) {
  cublasHandle_t h = weft_cublas();
  if (h == nullptr) return static_cast<int>(cudaErrorUnknown);
  if (cublasSetStream(h, static_cast<cudaStream_t>(stream)) != CUBLAS_STATUS_SUCCESS)
    return static_cast<int>(cudaErrorUnknown);
  cudaDataType t = dtype == 1 ? CUDA_R_16F : dtype == 2 ? CUDA_R_16BF : CUDA_R_32F;
  const float alpha = 1.0f, beta = 0.0f;
  cublasStatus_t st = cublasGemmStridedBatchedEx(
      h, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k),
      &alpha, b, t, static_cast<int>(n), stride_b, a, t, static_cast<int>(k), stride_a, &beta, c, t,
      static_cast<int>(n), stride_c, static_cast<int>(batch), CUBLAS_COMPUTE_32F,
      CUBLAS_GEMM_DEFAULT);
  return st == CUBLAS_STATUS_SUCCESS ? 0 : static_cast<int>(cudaErrorUnknown);
}

#define WEFT_SET_SMEM(kernel, bytes)                                                         \
  do {                                                                                       \
    cudaError_t e_ = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, \
                                          (bytes));                                          \
    if (e_ != cudaSuccess) return static_cast<int>(e_);                                      \
  } while (0)
#define WEFT_LAUNCH(kernel, gx, gy, gz, threads, smem, stream, ...)                    \
  do {                                                                                 \
    kernel<<<dim3((gx), (gy), (gz)), dim3((threads)), (smem),                          \
             static_cast<cudaStream_t>(stream)>>>(__VA_ARGS__);                        \
    cudaError_t e_ = cudaGetLastError();                                               \
    if (e_ != cudaSuccess) return static_cast<int>(e_);                                \
  } while (0)

#else
// ---------------------------------------------------------------- host emulation
// A block's threads are real std::threads meeting at a std::barrier; blocks run one after
// another; warp collectives exchange values through per-warp scratch between two warp barriers.
#include <barrier>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#define WEFT_DEV static inline
#define WEFT_KERNEL(threads) static void
#define WEFT_UNROLL

struct weft_f16 {
  uint16_t bits;
};
struct weft_bf16 {
  uint16_t bits;
};
static inline float weft_f16_bits_to_float(uint16_t b) {
  _Float16 h;
  memcpy(&h, &b, 2);
  return static_cast<float>(h);
}
static inline float weft_bf16_bits_to_float(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static inline float weft_ld(const float* p) { return *p; }
static inline float weft_ld(const weft_f16* p) { return weft_f16_bits_to_float(p->bits); }
static inline float weft_ld(const weft_bf16* p) { return weft_bf16_bits_to_float(p->bits); }
static inline void weft_st(float* p, float v) { *p = v; }
static inline void weft_st(weft_f16* p, float v) {
  _Float16 h = static_cast<_Float16>(v);
  memcpy(&p->bits, &h, 2);
}
static inline void weft_st(weft_bf16* p, float v) {  // round to nearest even, NaN kept quiet
  uint32_t u;
  memcpy(&u, &v, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    p->bits = static_cast<uint16_t>((u >> 16) | 0x40u);
    return;
  }
  u += 0x7fffu + ((u >> 16) & 1u);
  p->bits = static_cast<uint16_t>(u >> 16);
}

struct weft_emu_block {
  weft_emu_block(int threads, size_t smem_bytes)
      : bar(threads), smem(smem_bytes + 128, 0xff), scratch(static_cast<size_t>(threads) * 8),
        ptrs(static_cast<size_t>(threads)) {
    for (int w = 0; w < (threads + 31) / 32; ++w)
      warp_bars.push_back(std::make_unique<std::barrier<>>(threads - 32 * w < 32 ? threads - 32 * w : 32));
  }
  std::barrier<> bar;
  std::vector<std::unique_ptr<std::barrier<>>> warp_bars;
  std::vector<unsigned char> smem;  // filled with 0xff: reading unwritten shared memory gives NaN
  std::vector<uint32_t> scratch;    // 8 words per thread for warp collectives
  std::vector<const unsigned char*> ptrs;
};
// An issued cp.async: the 16 source bytes, written to dst only when a wait retires its group.
struct weft_emu_copy {
  unsigned char* dst;
  unsigned char bytes[16];
};
struct weft_emu_thread {
  int tid = 0, bx = 0, by = 0, bz = 0;
  int64_t gtid = 0, gthreads = 1;
  unsigned char* smem = nullptr;
  weft_emu_block* block = nullptr;
  std::vector<weft_emu_copy> open_copies;              // issued, not yet committed
  std::deque<std::vector<weft_emu_copy>> copy_groups;  // committed, not landed; oldest first
};
static thread_local weft_emu_thread weft_emu;

static inline unsigned char* weft_smem_base() { return weft_emu.smem; }
static inline int weft_tid() { return weft_emu.tid; }
static inline int weft_bid_x() { return weft_emu.bx; }
static inline int weft_bid_y() { return weft_emu.by; }
static inline int weft_bid_z() { return weft_emu.bz; }
static inline int64_t weft_gtid() { return weft_emu.gtid; }
static inline int64_t weft_gthreads() { return weft_emu.gthreads; }
static inline void weft_sync() { weft_emu.block->bar.arrive_and_wait(); }
static inline void weft_warp_sync() { weft_emu.block->warp_bars[weft_emu.tid >> 5]->arrive_and_wait(); }

static inline float weft_shfl_xor(float v, int mask) {
  uint32_t* s = weft_emu.block->scratch.data();
  memcpy(&s[weft_emu.tid * 8], &v, 4);
  weft_warp_sync();
  float r;
  memcpy(&r, &s[(weft_emu.tid ^ mask) * 8], 4);
  weft_warp_sync();
  return r;
}
static inline void weft_copy16(void* dst, const void* src) { memcpy(dst, src, 16); }
// cp.async lands only at the wait_group that retires its commit group, so a wrong group count
// or a read before the wait reads stale shared memory, as it may on a GPU.
static inline void weft_cp_async16(void* smem_dst, const void* gmem_src) {
  weft_emu_copy c;
  c.dst = static_cast<unsigned char*>(smem_dst);
  memcpy(c.bytes, gmem_src, 16);
  weft_emu.open_copies.push_back(c);
}
static inline void weft_cp_async_commit() {
  weft_emu.copy_groups.push_back(std::move(weft_emu.open_copies));
  weft_emu.open_copies.clear();
}
template <int N>
static inline void weft_cp_async_wait() {
  while (weft_emu.copy_groups.size() > static_cast<size_t>(N)) {
    for (const weft_emu_copy& c : weft_emu.copy_groups.front()) memcpy(c.dst, c.bytes, 16);
    weft_emu.copy_groups.pop_front();
  }
}

// ldmatrix .m8n8 .b16: lanes 8i..8i+7 give the row addresses of matrix i; lane l receives row
// l/4, elements 2(l%4) and 2(l%4)+1 of each matrix (.trans: column l/4, rows 2(l%4), 2(l%4)+1).
static inline void weft_ldmatrix(uint32_t* r, const void* p, int matrices, bool trans) {
  weft_emu_block& b = *weft_emu.block;
  b.ptrs[weft_emu.tid] = static_cast<const unsigned char*>(p);
  weft_warp_sync();
  int lane = weft_emu.tid & 31, base = weft_emu.tid & ~31;
  for (int i = 0; i < matrices; ++i) {
    if (!trans) {
      memcpy(&r[i], b.ptrs[base + 8 * i + lane / 4] + 4 * (lane % 4), 4);
    } else {
      uint16_t h[2];
      for (int j = 0; j < 2; ++j) memcpy(&h[j], b.ptrs[base + 8 * i + 2 * (lane % 4) + j] + 2 * (lane / 4), 2);
      r[i] = static_cast<uint32_t>(h[0]) | (static_cast<uint32_t>(h[1]) << 16);
    }
  }
  weft_warp_sync();
}
static inline void weft_ldmatrix_x4(uint32_t* r, const void* p) { weft_ldmatrix(r, p, 4, false); }
static inline void weft_ldmatrix_x2_trans(uint32_t* r, const void* p) { weft_ldmatrix(r, p, 2, true); }

// mma.sync m16n8k16, A row-major 16x16, B column-major 16x8, f32 accumulators. Lane l,
// g = l/4, t = l%4: A regs {(g, 2t..), (g+8, 2t..), (g, 2t+8..), (g+8, 2t+8..)}; B regs
// {(k 2t.., n g), (k 2t+8.., n g)}; C/D {(g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1)}.
static inline void weft_mma(float* d, const uint32_t* a, const uint32_t* b,
                            float (*cvt)(uint16_t)) {
  uint32_t* s = weft_emu.block->scratch.data();
  int tid = weft_emu.tid, lane = tid & 31, base = tid & ~31;
  for (int i = 0; i < 4; ++i) s[tid * 8 + i] = a[i];
  for (int i = 0; i < 2; ++i) s[tid * 8 + 4 + i] = b[i];
  weft_warp_sync();
  auto half = [&](int l, int reg, int hi) {
    uint32_t w = s[(base + l) * 8 + reg];
    return cvt(static_cast<uint16_t>(hi ? w >> 16 : w & 0xffffu));
  };
  int g = lane / 4, t = lane % 4;
  for (int i = 0; i < 4; ++i) {
    int row = g + 8 * (i / 2), col = 2 * t + (i % 2);
    float acc = d[i];
    for (int k = 0; k < 16; ++k) {
      float av = half((row % 8) * 4 + (k % 8) / 2, (row >= 8 ? 1 : 0) + (k >= 8 ? 2 : 0), k % 2);
      float bv = half(col * 4 + (k % 8) / 2, 4 + (k >= 8 ? 1 : 0), k % 2);
      acc += av * bv;
    }
    d[i] = acc;
  }
  weft_warp_sync();
}
static inline void weft_mma_f16(float* d, const uint32_t* a, const uint32_t* b) {
  weft_mma(d, a, b, weft_f16_bits_to_float);
}
static inline void weft_mma_bf16(float* d, const uint32_t* a, const uint32_t* b) {
  weft_mma(d, a, b, weft_bf16_bits_to_float);
}

template <class T>
static void weft_gemm_loop(int64_t m, int64_t n, int64_t k, const T* a, int64_t sa, const T* b,
                           int64_t sb, T* c, int64_t sc, int64_t batch) {
  for (int64_t p = 0; p < batch; ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float acc = 0.0f;
        for (int64_t q = 0; q < k; ++q) acc += weft_ld(&a[p * sa + i * k + q]) * weft_ld(&b[p * sb + q * n + j]);
        weft_st(&c[p * sc + i * n + j], acc);
      }
}
// The emulated cuBLAS call: the same arguments, a plain loop with f32 accumulation.
[[maybe_unused]] static inline int weft_gemm(int dtype, int64_t m, int64_t n, int64_t k, const void* a,
                            int64_t stride_a, const void* b, int64_t stride_b, void* c,
                            int64_t stride_c, int64_t batch, void*) {
  if (dtype == 1)
    weft_gemm_loop(m, n, k, static_cast<const weft_f16*>(a), stride_a, static_cast<const weft_f16*>(b), stride_b, static_cast<weft_f16*>(c), stride_c, batch);
  else if (dtype == 2)
    weft_gemm_loop(m, n, k, static_cast<const weft_bf16*>(a), stride_a, static_cast<const weft_bf16*>(b), stride_b, static_cast<weft_bf16*>(c), stride_c, batch);
  else
    weft_gemm_loop(m, n, k, static_cast<const float*>(a), stride_a, static_cast<const float*>(b), stride_b, static_cast<float*>(c), stride_c, batch);
  return 0;
}

template <class F>
static void weft_emu_launch(int gx, int gy, int gz, int threads, size_t smem, F body) {
  weft_emu_block block(threads, smem);
  unsigned char* base = block.smem.data();
  base += (128 - reinterpret_cast<uintptr_t>(base) % 128) % 128;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      weft_emu.tid = t;
      weft_emu.smem = base;
      weft_emu.block = &block;
      weft_emu.gthreads = static_cast<int64_t>(gx) * threads;
      for (int b = 0; b < gx * gy * gz; ++b) {
        weft_emu.bx = b % gx;
        weft_emu.by = (b / gx) % gy;
        weft_emu.bz = b / (gx * gy);
        weft_emu.gtid = static_cast<int64_t>(weft_emu.bx) * threads + t;
        body();
        // Copies never waited for never land: the block's code must not rely on them.
        weft_emu.open_copies.clear();
        weft_emu.copy_groups.clear();
        block.bar.arrive_and_wait();  // the next block reuses the same shared memory
      }
    });
  for (std::thread& th : pool) th.join();
}
#define WEFT_SET_SMEM(kernel, bytes) \
  do {                               \
  } while (0)
#define WEFT_LAUNCH(kernel, gx, gy, gz, threads, smem, stream, ...) \
  weft_emu_launch((gx), (gy), (gz), (threads), (smem), [&] { kernel(__VA_ARGS__); })
#endif

// ---------------------------------------------------------------- both
WEFT_DEV float weft_silu(float x) { return x / (1.0f + expf(-x)); }
WEFT_DEV float weft_gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }
// Byte-level XOR swizzle (plan.h): the 16-byte chunk index within each 128-byte row is XORed
// with the row index modulo 8; `i` is an element index, E the element size.
template <int E>
WEFT_DEV int weft_swz(int i) {
  int b = i * E;
  return (b ^ (((b >> 7) & 7) << 4)) / E;
}
)WEFT";
}

}  // namespace weft
