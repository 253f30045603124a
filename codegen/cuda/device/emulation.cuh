// Host emulation of the device primitives of codegen/cuda/device/cuda.cuh, for a unit compiled as
// C++20 with -DWEFT_HOST_EMULATION: a block's threads are real std::threads meeting at a
// std::barrier; blocks run one after another; warp collectives exchange values through per-warp
// scratch between two warp barriers; cp.async lands at the wait that retires its group.
#pragma once

#include <stdint.h>
#include <string.h>

#include <stdio.h>
#include <stdlib.h>

#include <barrier>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#define WEFT_DEV static inline
#define WEFT_BLOCK_FN static inline
#define WEFT_KERNEL(threads) static void
#define WEFT_UNROLL

struct weft_f16 {
  uint16_t bits;
};
struct weft_bf16 {
  uint16_t bits;
};
#ifdef __FLT16_MANT_DIG__  // the compiler has _Float16 (GCC 12; clang from 15 on x86)
static inline float weft_f16_bits_to_float(uint16_t b) {
  _Float16 h;
  memcpy(&h, &b, 2);
  return static_cast<float>(h);
}
static inline uint16_t weft_float_to_f16_bits(float v) {
  _Float16 h = static_cast<_Float16>(v);
  uint16_t b;
  memcpy(&b, &h, 2);
  return b;
}
#else  // IEEE binary16 by hand: the same values, rounded to nearest even
static inline float weft_f16_bits_to_float(uint16_t b) {
  uint32_t sign = static_cast<uint32_t>(b & 0x8000u) << 16, exp = (b >> 10) & 0x1fu,
           man = b & 0x3ffu, u;
  if (exp == 0x1f) {
    u = sign | 0x7f800000u | (man << 13);
  } else if (exp != 0) {
    u = sign | ((exp + 112) << 23) | (man << 13);
  } else if (man == 0) {
    u = sign;
  } else {  // subnormal: man * 2^-24, exact in float
    float f = static_cast<float>(man) * 0x1p-24f;
    return sign ? -f : f;
  }
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static inline uint16_t weft_float_to_f16_bits(float v) {
  uint32_t u;
  memcpy(&u, &v, 4);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds past 65504
  if (a < 0x38800000u) {  // below 2^-14: a subnormal (or zero), in units of 2^-24
    float f;
    memcpy(&f, &a, 4);
    float units = f * 0x1p24f;  // exact; rint rounds to nearest even
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(__builtin_rintf(units)));
  }
  uint32_t rounded = a + 0xfffu + ((a >> 13) & 1u);  // to nearest even at bit 13
  return static_cast<uint16_t>(sign | static_cast<uint16_t>((rounded - 0x38000000u) >> 13));
}
#endif
static inline float weft_bf16_bits_to_float(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static inline float weft_ld(const float* p) {
  return *p;
}
static inline float weft_ld(const weft_f16* p) {
  return weft_f16_bits_to_float(p->bits);
}
static inline float weft_ld(const weft_bf16* p) {
  return weft_bf16_bits_to_float(p->bits);
}
static inline void weft_st(float* p, float v) {
  *p = v;
}
static inline void weft_st(weft_f16* p, float v) {
  p->bits = weft_float_to_f16_bits(v);
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
      : bar(threads),
        smem(smem_bytes + 128, 0xff),
        scratch(static_cast<size_t>(threads) * 8),
        ptrs(static_cast<size_t>(threads)) {
    for (int w = 0; w < (threads + 31) / 32; ++w)
      warp_bars.push_back(
          std::make_unique<std::barrier<>>(threads - 32 * w < 32 ? threads - 32 * w : 32));
  }
  std::barrier<> bar;
  std::vector<std::unique_ptr<std::barrier<>>> warp_bars;
  std::vector<unsigned char> smem;  // filled with 0xff: reading unwritten shared memory gives NaN
  std::vector<uint32_t> scratch;    // 8 words per thread for warp collectives
  std::vector<const unsigned char*> ptrs;
  // Named barriers (weft_bar_sync), one per (id, thread count), made on first use.
  std::mutex named_mutex;
  std::map<std::pair<int, int>, std::unique_ptr<std::barrier<>>> named;
};
// An issued cp.async: the 16 source bytes, written to dst only when a wait retires its group.
struct weft_emu_copy {
  unsigned char* dst;
  unsigned char bytes[16];
};
// What a thread of a persistent kernel does (mpk/device/megakernel.cuh marks it): `none` outside
// one (and in units without one).
enum weft_emu_role_kind { weft_emu_role_none, weft_emu_role_protocol, weft_emu_role_body_loop };
struct weft_emu_thread {
  int tid = 0, bx = 0, by = 0, bz = 0;
  weft_emu_role_kind role = weft_emu_role_none;
  int64_t gtid = 0, gthreads = 1;
  unsigned char* smem = nullptr;
  weft_emu_block* block = nullptr;
  std::vector<weft_emu_copy> open_copies;              // issued, not yet committed
  std::deque<std::vector<weft_emu_copy>> copy_groups;  // committed, not landed; oldest first
};
static thread_local weft_emu_thread weft_emu;

static inline unsigned char* weft_smem_base() {
  return weft_emu.smem;
}
static inline int weft_tid() {
  return weft_emu.tid;
}
static inline int weft_bid_x() {
  return weft_emu.bx;
}
static inline int weft_bid_y() {
  return weft_emu.by;
}
static inline int weft_bid_z() {
  return weft_emu.bz;
}
static inline int64_t weft_gtid() {
  return weft_emu.gtid;
}
static inline int64_t weft_gthreads() {
  return weft_emu.gthreads;
}
static inline void weft_sync() {
  weft_emu.block->bar.arrive_and_wait();
}
// Called by weft_mpk_task on entry. On a GPU a protocol thread entering a body would run its
// .aligned instructions in a divergent warp (undefined in PTX), which emulation cannot show, so
// the role is checked instead and a violation aborts with a message.
static inline void weft_task_body_entry() {
  if (weft_emu.role == weft_emu_role_protocol) {
    fprintf(stderr,
            "thread %d of CTA %d runs the persistent kernel's protocol and entered a task "
            "body\n",
            weft_emu.tid, weft_emu.bx);
    abort();
  }
}
// bar.sync id, threads: only the block's first `threads` threads may take part (a thread beyond
// them is a bug in the generated code, reported and aborted rather than left to hang).
static inline void weft_bar_sync(int id, int threads) {
  if (weft_emu.tid >= threads) {
    fprintf(stderr, "weft_bar_sync(%d, %d) called by thread %d\n", id, threads, weft_emu.tid);
    abort();
  }
  weft_emu_block& b = *weft_emu.block;
  std::barrier<>* bar;
  {
    std::lock_guard<std::mutex> lock(b.named_mutex);
    std::unique_ptr<std::barrier<>>& slot = b.named[{id, threads}];
    if (!slot) slot = std::make_unique<std::barrier<>>(threads);
    bar = slot.get();
  }
  bar->arrive_and_wait();
}
static inline void weft_warp_sync() {
  weft_emu.block->warp_bars[weft_emu.tid >> 5]->arrive_and_wait();
}

static inline float weft_shfl_xor(float v, int mask) {
  uint32_t* s = weft_emu.block->scratch.data();
  memcpy(&s[weft_emu.tid * 8], &v, 4);
  weft_warp_sync();
  float r;
  memcpy(&r, &s[(weft_emu.tid ^ mask) * 8], 4);
  weft_warp_sync();
  return r;
}
static inline void weft_copy16(void* dst, const void* src) {
  memcpy(dst, src, 16);
}
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
      for (int j = 0; j < 2; ++j)
        memcpy(&h[j], b.ptrs[base + 8 * i + 2 * (lane % 4) + j] + 2 * (lane / 4), 2);
      r[i] = static_cast<uint32_t>(h[0]) | (static_cast<uint32_t>(h[1]) << 16);
    }
  }
  weft_warp_sync();
}
static inline void weft_ldmatrix_x4(uint32_t* r, const void* p) {
  weft_ldmatrix(r, p, 4, false);
}
static inline void weft_ldmatrix_x2_trans(uint32_t* r, const void* p) {
  weft_ldmatrix(r, p, 2, true);
}

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
        for (int64_t q = 0; q < k; ++q)
          acc += weft_ld(&a[p * sa + i * k + q]) * weft_ld(&b[p * sb + q * n + j]);
        weft_st(&c[p * sc + i * n + j], acc);
      }
}
// The emulated cuBLAS call: the same arguments, a plain loop with f32 accumulation.
[[maybe_unused]] static inline int weft_gemm(int dtype, int64_t m, int64_t n, int64_t k,
                                             const void* a, int64_t stride_a, const void* b,
                                             int64_t stride_b, void* c, int64_t stride_c,
                                             int64_t batch, void*) {
  if (dtype == 1)
    weft_gemm_loop(m, n, k, static_cast<const weft_f16*>(a), stride_a,
                   static_cast<const weft_f16*>(b), stride_b, static_cast<weft_f16*>(c), stride_c,
                   batch);
  else if (dtype == 2)
    weft_gemm_loop(m, n, k, static_cast<const weft_bf16*>(a), stride_a,
                   static_cast<const weft_bf16*>(b), stride_b, static_cast<weft_bf16*>(c), stride_c,
                   batch);
  else
    weft_gemm_loop(m, n, k, static_cast<const float*>(a), stride_a, static_cast<const float*>(b),
                   stride_b, static_cast<float*>(c), stride_c, batch);
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
// The shared-memory limit needs no raising on the host; each raise is counted, so a test can
// check that WEFT_SET_SMEM (prelude.cuh) raises it once, not at every launch.
static uint64_t weft_emu_smem_limit_raises = 0;
template <class K>
static inline int weft_raise_smem_limit(K, int) {
  __atomic_fetch_add(&weft_emu_smem_limit_raises, 1, __ATOMIC_RELAXED);
  return 0;
}
extern "C" uint64_t weft_smem_limit_raises(void) {
  return __atomic_load_n(&weft_emu_smem_limit_raises, __ATOMIC_RELAXED);
}
#define WEFT_LAUNCH(kernel, gx, gy, gz, threads, smem, stream, ...) \
  weft_emu_launch((gx), (gy), (gz), (threads), (smem), [&] { kernel(__VA_ARGS__); })
