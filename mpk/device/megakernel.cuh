// The persistent kernel: one launch runs a whole task graph for `iterations` iterations. Pasted
// by emit_megakernel_unit (mpk/megakernel.h) after the CUDA prelude, the task bodies (which
// define weft_mpk_worker_threads, weft_mpk_body_smem_bytes and weft_mpk_task) and the graph's
// constants (weft_mpk_workers, _schedulers, _events, _worker_cap, _sched_cap, _watchdog_ns).
// Roles by blockIdx.x: CTAs [0, workers) are workers, the trailing CTAs hold the schedulers, one
// per warp. In a worker CTA thread 0 runs the protocol and the other threads wait in a command
// loop; every thread runs each task body between two CTA barriers.
#pragma once

#include <stdint.h>

#include "mpk/device/launch_check.cuh"
#include "mpk/device/megakernel_abi.cuh"
#include "mpk/device/protocol.cuh"
#if defined(WEFT_HOST_EMULATION)
#include "mpk/device/emulated_platform.cuh"
#else
#include "mpk/device/cuda_platform.cuh"
#endif

static_assert(weft_mpk_worker_threads % 32 == 0 && weft_mpk_worker_threads >= 32,
              "a worker CTA is whole warps");

// The leader's command to its CTA, at the start of dynamic shared memory; the body's shared
// memory follows at kWeftMpkCommandBytes (128-byte aligned).
struct WeftMpkCommand {
  uint32_t stop, kernel;
  int bx, by, bz;
};
constexpr int weft_mpk_smem_bytes = kWeftMpkCommandBytes + weft_mpk_body_smem_bytes;
constexpr int weft_mpk_warps_per_cta = weft_mpk_worker_threads / 32;
constexpr int weft_mpk_scheduler_ctas =
    (static_cast<int>(weft_mpk_schedulers) + weft_mpk_warps_per_cta - 1) / weft_mpk_warps_per_cta;
constexpr int weft_mpk_ctas = static_cast<int>(weft_mpk_workers) + weft_mpk_scheduler_ctas;
WEFT_HD constexpr weft_mpk::Layout weft_mpk_layout() {
  return weft_mpk::Layout{weft_mpk_events, weft_mpk_workers, weft_mpk_schedulers,
                          weft_mpk_worker_cap, weft_mpk_sched_cap};
}

// One task on a worker CTA, entered by every thread: meet at barrier 0, stop if told to, run the
// body, meet again. Not inlined, so the leader (from run_task) and the other threads (from their
// command loop) execute the very same instructions: the barriers, and inside the body
// bar.sync/mma.sync/ldmatrix, are .aligned, whose PTX contract is that all threads of a CTA (or
// warp) execute the same instruction; two inlined copies, one per caller, would break it within
// warp 0. Returns whether the command was to stop.
WEFT_MPK_ONE_COPY bool weft_mpk_cta_step(const WeftMpkArgs* a, unsigned char* smem) {
  const WeftMpkCommand* c = reinterpret_cast<const WeftMpkCommand*>(smem);
  weft_sync();
  if (c->stop) return true;
  weft_mpk_task(c->kernel, c->bx, c->by, c->bz, smem + kWeftMpkCommandBytes, a->inputs,
                a->outputs, a->workspace);
  weft_sync();
  return false;
}

// The protocol's platform inside the kernel (one per leader thread or scheduler lane).
struct WeftMpkPlatform {
  const WeftMpkArgs* args;
  unsigned char* smem;

  WEFT_MPK_DEV uint64_t load_acquire(const uint64_t* p) { return weft_mpk_ld_acquire(p); }
  WEFT_MPK_DEV uint64_t add_release(uint64_t* p, uint64_t v) { return weft_mpk_add_acq_rel(p, v); }
  WEFT_MPK_DEV void relax() { weft_mpk_relax(); }
  WEFT_MPK_DEV uint64_t clock_ns() { return weft_mpk_clock_ns(); }
  // Publishes the task, meets the CTA at a barrier, runs the leader's share of the body, and
  // meets it again: after the second barrier every thread's writes are ordered before the
  // leader's trigger (a release at GPU scope).
  WEFT_MPK_DEV void run_task(uint32_t, const weft_mpk::TaskDesc& t, const weft_mpk::OpDesc& op) {
    WeftMpkCommand* c = reinterpret_cast<WeftMpkCommand*>(smem);
    c->stop = 0;
    c->kernel = op.kernel;
    c->bx = t.bx;
    c->by = t.by;
    c->bz = t.bz;
    weft_mpk_cta_step(args, smem);
  }
  WEFT_MPK_DEV void group_barrier() {}  // run_task's second barrier; empty tasks have none
  WEFT_MPK_DEV void before_iteration(uint64_t) {}
  WEFT_MPK_DEV void after_iteration(uint64_t) {}
  WEFT_MPK_DEV void tripped() { weft_mpk_trip(); }
};

WEFT_MPK_DEV void weft_mpk_persistent(const WeftMpkArgs& a) {
  unsigned char* smem = weft_smem_base();
  WeftMpkCommand* command = reinterpret_cast<WeftMpkCommand*>(smem);
  const int cta = weft_bid_x(), tid = weft_tid();
  const weft_mpk::Config config = {weft_mpk_schedulers, a.iterations, weft_mpk_watchdog_ns};
  WeftMpkPlatform platform = {&a, smem};
  if (cta < static_cast<int>(weft_mpk_workers)) {
    if (tid == 0) {
      weft_mpk::Protocol<WeftMpkPlatform> protocol(weft_mpk::view_blob(a.blob), weft_mpk_layout(),
                                                   config, a.state, a.report, a.trace, platform);
      protocol.worker(static_cast<uint32_t>(cta));
      command->stop = 1;
      weft_mpk_cta_step(&a, smem);
      return;
    }
    while (!weft_mpk_cta_step(&a, smem)) {
    }
    return;
  }
  const int s = (cta - static_cast<int>(weft_mpk_workers)) * weft_mpk_warps_per_cta + tid / 32;
  if (tid % 32 != 0 || s >= static_cast<int>(weft_mpk_schedulers)) return;
  weft_mpk::Protocol<WeftMpkPlatform> protocol(weft_mpk::view_blob(a.blob), weft_mpk_layout(),
                                               config, a.state, a.report, a.trace, platform);
  protocol.scheduler(static_cast<uint32_t>(s));
}

#if defined(WEFT_HOST_EMULATION)

extern "C" int weft_mpk_launch(const WeftMpkArgs* args, void*, char* error, int error_bytes) {
  // Emulated CTAs are threads, all running at once: the rule holds with one CTA per "SM".
  if (weft_mpk_check_co_residency(1, 1, weft_mpk_ctas, weft_mpk_ctas, weft_mpk_worker_threads,
                                  weft_mpk_smem_bytes, error, error_bytes))
    return WEFT_MPK_REFUSED;
  const WeftMpkArgs a = *args;
  weft_emu_cooperative_launch(weft_mpk_ctas, weft_mpk_worker_threads, weft_mpk_smem_bytes,
                              [&] { weft_mpk_persistent(a); });
  return 0;
}

#else

extern "C" __global__ void __launch_bounds__(weft_mpk_worker_threads)
    weft_mpk_kernel(const WeftMpkArgs args) {
  weft_mpk_persistent(args);
}

// Refuses (WEFT_MPK_REFUSED, the reason in `error`) unless every CTA can be resident at once,
// then launches cooperatively, which the driver also refuses rather than run partly resident.
extern "C" int weft_mpk_launch(const WeftMpkArgs* args, void* stream, char* error,
                               int error_bytes) {
  int device = 0, cooperative = 0, sms = 0, per_sm = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess)
    e = cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (e == cudaSuccess && weft_mpk_smem_bytes > 48 * 1024)
    e = cudaFuncSetAttribute(weft_mpk_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             weft_mpk_smem_bytes);
  if (e == cudaSuccess)
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, weft_mpk_kernel,
                                                      weft_mpk_worker_threads, weft_mpk_smem_bytes);
  if (e != cudaSuccess) return static_cast<int>(e);
  if (weft_mpk_check_co_residency(cooperative, per_sm, sms, weft_mpk_ctas, weft_mpk_worker_threads,
                                  weft_mpk_smem_bytes, error, error_bytes))
    return WEFT_MPK_REFUSED;
  void* params[] = {const_cast<WeftMpkArgs*>(args)};
  e = cudaLaunchCooperativeKernel(reinterpret_cast<void*>(weft_mpk_kernel), dim3(weft_mpk_ctas),
                                  dim3(weft_mpk_worker_threads), params, weft_mpk_smem_bytes,
                                  static_cast<cudaStream_t>(stream));
  return static_cast<int>(e);
}

#endif

extern "C" uint64_t weft_mpk_state_words(void) {
  return weft_mpk::state_words(weft_mpk_layout());
}
extern "C" int weft_mpk_grid(int* ctas, int* threads, int* smem_bytes) {
  *ctas = weft_mpk_ctas;
  *threads = weft_mpk_worker_threads;
  *smem_bytes = weft_mpk_smem_bytes;
  return 0;
}
extern "C" void weft_mpk_layout_of(weft_mpk::Layout* out) {
  *out = weft_mpk_layout();
}
