// The protocol's primitives on a GPU (nvcc): acquire loads and acquire-release fetch-adds at GPU
// scope (inline PTX, the C++ mappings of the PTX memory model's atomics ABI), __nanosleep as the
// relax step, %globaltimer as the clock, the watchdog's stop (a system fence so the report in
// mapped host memory is visible, then __trap) and the worker CTA's handoff barrier. Used by
// mpk/device/megakernel.cuh after the prelude.
#pragma once

#include <stdint.h>

#define WEFT_MPK_DEV __device__ __forceinline__

WEFT_MPK_DEV uint64_t weft_mpk_ld_acquire(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
WEFT_MPK_DEV uint64_t weft_mpk_add_acq_rel(uint64_t* p, uint64_t v) {
  uint64_t old;
  asm volatile("atom.acq_rel.gpu.add.u64 %0, [%1], %2;" : "=l"(old) : "l"(p), "l"(v) : "memory");
  return old;
}
// A spinning leader sleeps a little between polls, leaving the SM's issue slots to the warps
// that do work (and the memory system to the producers it waits for).
WEFT_MPK_DEV void weft_mpk_relax() {
  __nanosleep(64);
}
WEFT_MPK_DEV uint64_t weft_mpk_clock_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
// The first failure's report is in mapped host memory: make it visible to the host, then stop
// the whole grid (the launch fails with an illegal-instruction error the host expects).
WEFT_MPK_DEV void weft_mpk_trip() {
  __threadfence_system();
  __trap();
}

// The worker CTA's handoff between its protocol warp and its compute warps
// (mpk/device/megakernel.cuh): every thread of the CTA arrives, but within the protocol warp lane
// 0 arrives from the protocol and lanes 1-31 from their idle loop, i.e. from different
// instructions of a divergent warp. That is legal for the non-.aligned barrier.sync (sm_70+;
// bar.sync and __syncthreads are barrier.sync.aligned, which is not). Barrier 0 with no count:
// all of the CTA's threads; task bodies use barrier 1. It orders memory among the participants
// like __syncthreads.
WEFT_MPK_DEV void weft_mpk_cta_handoff() {
  asm volatile("barrier.sync 0;" ::: "memory");
}
// Host emulation checks the warp roles (weft_task_body_entry); nothing to record on a GPU.
enum WeftMpkRole { weft_mpk_role_protocol, weft_mpk_role_body_loop };
WEFT_MPK_DEV void weft_mpk_mark_role(WeftMpkRole) {}
