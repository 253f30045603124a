// The persistent kernel: one launch runs a whole task graph for `iterations` iterations. Pasted
// by emit_megakernel_unit (mpk/runtime/megakernel.h) after the CUDA prelude, the task bodies (which
// define weft_mpk_worker_threads, weft_mpk_body_smem_bytes and weft_mpk_task) and the graph's
// constants (weft_mpk_workers, _schedulers, _events, _worker_cap, _sched_cap, _watchdog_ns).
// Roles by blockIdx.x: CTAs [0, workers) are workers, the trailing CTAs hold the schedulers, one
// per warp. A worker CTA is weft_mpk_worker_threads compute threads, which only ever run task
// bodies, and one protocol warp after them, whose lane 0 runs the protocol; the CTA meets at a
// handoff barrier before and after every body.
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
              "a worker CTA's compute threads are whole warps");

// The protocol lane's command to its CTA, at the start of dynamic shared memory; the body's
// shared memory follows at kWeftMpkCommandBytes (128-byte aligned).
struct WeftMpkCommand {
  uint32_t stop, kernel;
  int bx, by, bz;
};
// The protocol warp comes after the compute warps: a body's named barrier 1 counts the CTA's
// first threads, which are then always compute threads.
constexpr int weft_mpk_cta_threads = weft_mpk_worker_threads + kWeftMpkProtocolThreads;
constexpr int weft_mpk_protocol_lane0 = weft_mpk_worker_threads;
static_assert(weft_mpk_cta_threads <= 1024, "a CTA has at most 1024 threads");
constexpr int weft_mpk_smem_bytes = kWeftMpkCommandBytes + weft_mpk_body_smem_bytes;
constexpr int weft_mpk_warps_per_cta = weft_mpk_cta_threads / 32;
constexpr int weft_mpk_scheduler_ctas =
    (static_cast<int>(weft_mpk_schedulers) + weft_mpk_warps_per_cta - 1) / weft_mpk_warps_per_cta;
constexpr int weft_mpk_ctas = static_cast<int>(weft_mpk_workers) + weft_mpk_scheduler_ctas;
WEFT_HD constexpr weft_mpk::Layout weft_mpk_layout() {
  return weft_mpk::Layout{weft_mpk_events, weft_mpk_workers, weft_mpk_schedulers,
                          weft_mpk_worker_cap, weft_mpk_sched_cap};
}

// The compute threads of a worker CTA, for its whole life: the only place that enters a task
// body, so each compute warp reaches the bodies' .aligned instructions (bar.sync, mma.sync,
// ldmatrix, shuffles) converged. Each task is two handoffs: the first publishes the command, the
// second orders every thread's writes before the protocol lane's trigger.
WEFT_MPK_DEV void weft_mpk_compute_loop(const WeftMpkArgs& a, unsigned char* smem) {
  const WeftMpkCommand* c = reinterpret_cast<const WeftMpkCommand*>(smem);
  weft_mpk_mark_role(weft_mpk_role_body_loop);
  for (;;) {
    weft_mpk_cta_handoff();
    if (c->stop) return;
    weft_mpk_task(c->kernel, c->bx, c->by, c->bz, smem + kWeftMpkCommandBytes, a.inputs, a.outputs,
                  a.workspace);
    weft_mpk_cta_handoff();
  }
}

// Lanes 1-31 of the protocol warp: they arrive at every handoff (every thread of the CTA does)
// and run no body.
WEFT_MPK_DEV void weft_mpk_protocol_idle_lanes(unsigned char* smem) {
  const WeftMpkCommand* c = reinterpret_cast<const WeftMpkCommand*>(smem);
  weft_mpk_mark_role(weft_mpk_role_protocol);
  for (;;) {
    weft_mpk_cta_handoff();
    if (c->stop) return;
    weft_mpk_cta_handoff();
  }
}

// The protocol's platform inside the kernel (one per protocol lane or scheduler lane).
struct WeftMpkPlatform {
  const WeftMpkArgs* args;
  unsigned char* smem;

  WEFT_MPK_DEV uint64_t load_acquire(const uint64_t* p) { return weft_mpk_ld_acquire(p); }
  WEFT_MPK_DEV uint64_t add_release(uint64_t* p, uint64_t v) { return weft_mpk_add_acq_rel(p, v); }
  WEFT_MPK_DEV void relax() { weft_mpk_relax(); }
  WEFT_MPK_DEV uint64_t clock_ns() { return weft_mpk_clock_ns(); }
  // Publishes the task to the compute threads and waits while they run it: after the second
  // handoff every thread's writes are ordered before the trigger (a release at GPU scope).
  WEFT_MPK_DEV void run_task(uint32_t, const weft_mpk::TaskDesc& t, const weft_mpk::OpDesc& op) {
    WeftMpkCommand* c = reinterpret_cast<WeftMpkCommand*>(smem);
    c->stop = 0;
    c->kernel = op.kernel;
    c->bx = t.bx;
    c->by = t.by;
    c->bz = t.bz;
    weft_mpk_cta_handoff();
    weft_mpk_cta_handoff();
  }
  WEFT_MPK_DEV void group_barrier() {}  // run_task's second handoff; empty tasks have none
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
    if (tid < weft_mpk_worker_threads) {
      weft_mpk_compute_loop(a, smem);
    } else if (tid != weft_mpk_protocol_lane0) {
      weft_mpk_protocol_idle_lanes(smem);
    } else {
      weft_mpk_mark_role(weft_mpk_role_protocol);
      weft_mpk::Protocol<WeftMpkPlatform> protocol(weft_mpk::view_blob(a.blob), weft_mpk_layout(),
                                                   config, a.state, a.report, a.trace, platform);
      protocol.worker(static_cast<uint32_t>(cta));
      command->stop = 1;
      weft_mpk_cta_handoff();
    }
    return;
  }
  const int s = (cta - static_cast<int>(weft_mpk_workers)) * weft_mpk_warps_per_cta + tid / 32;
  if (tid % 32 != 0 || s >= static_cast<int>(weft_mpk_schedulers)) return;
  weft_mpk_mark_role(weft_mpk_role_protocol);
  weft_mpk::Protocol<WeftMpkPlatform> protocol(weft_mpk::view_blob(a.blob), weft_mpk_layout(),
                                               config, a.state, a.report, a.trace, platform);
  protocol.scheduler(static_cast<uint32_t>(s));
}

// How many times the launch's set-up (device queries, the shared-memory limit, the occupancy and
// the co-residency check) ran: once per loaded unit, however many launches follow.
static uint64_t weft_mpk_setups = 0;
static int weft_mpk_prepared = 0;  // 1 once the set-up passed
static int weft_mpk_unprepared(char* error, int error_bytes) {
  snprintf(error, static_cast<size_t>(error_bytes),
           "the persistent kernel was launched before weft_mpk_prepare succeeded");
  return WEFT_MPK_UNPREPARED;
}

#if defined(WEFT_HOST_EMULATION)

// Emulated CTAs are threads, all running at once: the rule holds with one CTA per "SM".
extern "C" int weft_mpk_prepare(char* error, int error_bytes) {
  ++weft_mpk_setups;
  if (weft_mpk_check_co_residency(1, 1, weft_mpk_ctas, weft_mpk_ctas, weft_mpk_cta_threads,
                                  weft_mpk_smem_bytes, error, error_bytes))
    return WEFT_MPK_REFUSED;
  weft_mpk_prepared = 1;
  return 0;
}

extern "C" int weft_mpk_launch(const WeftMpkArgs* args, void*, char* error, int error_bytes) {
  if (!weft_mpk_prepared) return weft_mpk_unprepared(error, error_bytes);
  const WeftMpkArgs a = *args;
  weft_emu_cooperative_launch(weft_mpk_ctas, weft_mpk_cta_threads, weft_mpk_smem_bytes,
                              [&] { weft_mpk_persistent(a); });
  return 0;
}

#else

extern "C" __global__ void __launch_bounds__(weft_mpk_cta_threads)
    weft_mpk_kernel(const WeftMpkArgs args) {
  weft_mpk_persistent(args);
}

// The launch's host-side set-up, once per loaded unit (on the current device): refuses
// (WEFT_MPK_REFUSED, the reason in `error`) unless every CTA can be resident at once.
extern "C" int weft_mpk_prepare(char* error, int error_bytes) {
  ++weft_mpk_setups;
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
                                                      weft_mpk_cta_threads, weft_mpk_smem_bytes);
  if (e != cudaSuccess) return static_cast<int>(e);
  if (weft_mpk_check_co_residency(cooperative, per_sm, sms, weft_mpk_ctas, weft_mpk_cta_threads,
                                  weft_mpk_smem_bytes, error, error_bytes))
    return WEFT_MPK_REFUSED;
  weft_mpk_prepared = 1;
  return 0;
}

// Only the cooperative launch (weft_mpk_prepare did the rest), so a launch between two CUDA
// events times GPU work and no host set-up; the driver refuses rather than run partly resident.
extern "C" int weft_mpk_launch(const WeftMpkArgs* args, void* stream, char* error,
                               int error_bytes) {
  if (!weft_mpk_prepared) return weft_mpk_unprepared(error, error_bytes);
  void* params[] = {const_cast<WeftMpkArgs*>(args)};
  return static_cast<int>(cudaLaunchCooperativeKernel(
      reinterpret_cast<void*>(weft_mpk_kernel), dim3(weft_mpk_ctas), dim3(weft_mpk_cta_threads),
      params, weft_mpk_smem_bytes, static_cast<cudaStream_t>(stream)));
}

#endif

extern "C" uint64_t weft_mpk_setup_count(void) {
  return weft_mpk_setups;
}
extern "C" uint64_t weft_mpk_state_words(void) {
  return weft_mpk::state_words(weft_mpk_layout());
}
extern "C" int weft_mpk_grid(int* ctas, int* threads, int* smem_bytes) {
  *ctas = weft_mpk_ctas;
  *threads = weft_mpk_cta_threads;
  *smem_bytes = weft_mpk_smem_bytes;
  return 0;
}
extern "C" void weft_mpk_layout_of(weft_mpk::Layout* out) {
  *out = weft_mpk_layout();
}
