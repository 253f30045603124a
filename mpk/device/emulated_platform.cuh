// The protocol's primitives in host emulation (-DWEFT_HOST_EMULATION), and the cooperative
// launch a persistent kernel needs: every CTA's threads run at once (each CTA with its own
// barrier and shared memory, as in codegen/cuda/device/emulation.cuh's one-block-at-a-time
// launch), since workers spin on each other's events. Atomics are GCC's __atomic builtins on the
// same words, the relax step yields, the clock is steady_clock, a trip only returns (the
// protocol's threads see the failed flag and stop), the handoff is the CTA's barrier, and each
// thread records its role for the check that no protocol thread enters a task body.
#pragma once

#include <stdint.h>

#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#define WEFT_MPK_DEV inline

WEFT_MPK_DEV uint64_t weft_mpk_ld_acquire(const uint64_t* p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
WEFT_MPK_DEV uint64_t weft_mpk_add_acq_rel(uint64_t* p, uint64_t v) {
  return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL);
}
WEFT_MPK_DEV void weft_mpk_relax() {
  std::this_thread::yield();
}
WEFT_MPK_DEV uint64_t weft_mpk_clock_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}
WEFT_MPK_DEV void weft_mpk_trip() {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

WEFT_MPK_DEV void weft_mpk_cta_handoff() {
  weft_sync();
}
enum WeftMpkRole { weft_mpk_role_protocol, weft_mpk_role_body_loop };
// Protocol threads (a protocol warp, a scheduler lane) must never enter a task body, and compute
// threads enter them from their command loop only: weft_task_body_entry (emulation.cuh) aborts on
// the first, and checking bodies in tests count the second.
WEFT_MPK_DEV void weft_mpk_mark_role(WeftMpkRole r) {
  weft_emu.role = r == weft_mpk_role_protocol ? weft_emu_role_protocol : weft_emu_role_body_loop;
}

// Runs body() on ctas x threads std::threads at once, CTA c's threads seeing blockIdx.x = c.
template <class F>
static void weft_emu_cooperative_launch(int ctas, int threads, size_t smem, F body) {
  std::vector<std::unique_ptr<weft_emu_block>> blocks;
  for (int c = 0; c < ctas; ++c) blocks.push_back(std::make_unique<weft_emu_block>(threads, smem));
  std::vector<std::thread> pool;
  for (int c = 0; c < ctas; ++c)
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, c, t] {
        unsigned char* base = blocks[c]->smem.data();
        base += (128 - reinterpret_cast<uintptr_t>(base) % 128) % 128;
        weft_emu.tid = t;
        weft_emu.bx = c;
        weft_emu.by = weft_emu.bz = 0;
        weft_emu.gtid = static_cast<int64_t>(c) * threads + t;
        weft_emu.gthreads = static_cast<int64_t>(ctas) * threads;
        weft_emu.smem = base;
        weft_emu.block = blocks[c].get();
        body();
        weft_emu.open_copies.clear();
        weft_emu.copy_groups.clear();
      });
  for (std::thread& th : pool) th.join();
}
