// Device primitives on a real GPU (nvcc): thread and block indices, barriers, shared memory,
// f16/bf16 loads and stores, warp shuffles, cp.async, ldmatrix, mma.sync, the library GEMM and
// kernel launches. codegen/cuda/device/emulation.cuh defines the same names on the host.
#pragma once

#include <stdint.h>

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#define WEFT_DEV __device__ __forceinline__
// A block function (one block graph, docs/cuda-backend.md): inlined into its thin __global__
// wrapper, and callable the same way from another kernel.
#define WEFT_BLOCK_FN __device__ __forceinline__
#define WEFT_KERNEL(threads) __global__ void __launch_bounds__(threads)
#define WEFT_UNROLL _Pragma("unroll")
typedef __half weft_f16;
typedef __nv_bfloat16 weft_bf16;

extern __shared__ __align__(128) unsigned char weft_smem[];
WEFT_DEV unsigned char* weft_smem_base() {
  return weft_smem;
}
WEFT_DEV int weft_tid() {
  return static_cast<int>(threadIdx.x);
}
WEFT_DEV int weft_bid_x() {
  return static_cast<int>(blockIdx.x);
}
WEFT_DEV int weft_bid_y() {
  return static_cast<int>(blockIdx.y);
}
WEFT_DEV int weft_bid_z() {
  return static_cast<int>(blockIdx.z);
}
WEFT_DEV int64_t weft_gtid() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
WEFT_DEV int64_t weft_gthreads() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}
WEFT_DEV void weft_sync() {
  __syncthreads();
}
// Host emulation checks here that no thread of a persistent kernel's protocol enters a task body.
WEFT_DEV void weft_task_body_entry() {}
// Barrier `id` of the CTA's first `threads` threads (a multiple of 32): a task body of a persistent
// kernel synchronizes its own threads while the worker's other threads wait elsewhere (barrier 0 is
// __syncthreads). Orders shared and global memory among the participants like __syncthreads.
WEFT_DEV void weft_bar_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

WEFT_DEV float weft_ld(const float* p) {
  return *p;
}
WEFT_DEV float weft_ld(const weft_f16* p) {
  return __half2float(*p);
}
WEFT_DEV float weft_ld(const weft_bf16* p) {
  return __bfloat162float(*p);
}
WEFT_DEV void weft_st(float* p, float v) {
  *p = v;
}
WEFT_DEV void weft_st(weft_f16* p, float v) {
  *p = __float2half_rn(v);
}
WEFT_DEV void weft_st(weft_bf16* p, float v) {
  *p = __float2bfloat16_rn(v);
}

WEFT_DEV float weft_shfl_xor(float v, int mask) {
  return __shfl_xor_sync(0xffffffffu, v, mask);
}

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
[[maybe_unused]] static inline int weft_gemm(int dtype, int64_t m, int64_t n, int64_t k,
                                             const void* a, int64_t stride_a, const void* b,
                                             int64_t stride_b, void* c, int64_t stride_c,
                                             int64_t batch, void* stream) {
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

// WEFT_SET_SMEM (prelude.cuh) calls it once per call site.
template <class K>
static inline int weft_raise_smem_limit(K kernel, int bytes) {
  return static_cast<int>(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
}
#define WEFT_LAUNCH(kernel, gx, gy, gz, threads, smem, stream, ...) \
  do {                                                              \
    kernel<<<dim3((gx), (gy), (gz)), dim3((threads)), (smem),       \
             static_cast<cudaStream_t>(stream)>>>(__VA_ARGS__);     \
    cudaError_t e_ = cudaGetLastError();                            \
    if (e_ != cudaSuccess) return static_cast<int>(e_);             \
  } while (0)
