// Loading and running a persistent-kernel unit (mpk/runtime/megakernel.h): built for host emulation
// (every CTA a group of threads, host buffers) or with nvcc for a GPU (device buffers, a
// cooperative launch after the co-residency check). A refused launch is a UserError; a watchdog
// trip comes back as the run's report.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "mpk/encode.h"
#include "mpk/runtime/runtime_proto.h"
#include "runtime/program.h"

namespace weft {

struct MegakernelRun {
  bool ok = true;
  std::string report;           // format_report of the watchdog's report when !ok
  std::vector<TaskSpan> trace;  // when traced: (iteration - 1) * tasks + task
  double seconds = 0;
};

class LoadedMegakernel;

// A launch set up once and run any number of times (a decode loop): on a GPU the blob, the
// protocol state, the pointer tables and the mapped report are on the device from `prepare` on,
// so a run copies nothing but zeroes the protocol state and launches. The tensors are the
// caller's and stay where they are between runs.
class PreparedLaunch {
 public:
  ~PreparedLaunch();
  PreparedLaunch(const PreparedLaunch&) = delete;
  PreparedLaunch& operator=(const PreparedLaunch&) = delete;
  // One launch of `iterations` iterations; the watchdog's report as LoadedMegakernel::run's.
  // `trace`: every task's span, as LoadedMegakernel::run's (on a GPU the trace buffer is
  // allocated at the first traced run, grown when a run needs more, zeroed before each traced
  // run and copied back after it; an untraced run passes no buffer and copies nothing more).
  MegakernelRun run(uint64_t iterations, bool trace = false);

 private:
  friend class LoadedMegakernel;
  struct Impl;
  explicit PreparedLaunch(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class LoadedMegakernel {
 public:
  ~LoadedMegakernel();
  LoadedMegakernel(const LoadedMegakernel&) = delete;
  LoadedMegakernel& operator=(const LoadedMegakernel&) = delete;
  bool emulated() const { return emulated_; }
  int ctas() const { return ctas_; }
  // Runs `blob` `iterations` times. The tensors are host pointers in emulation, device pointers
  // on a GPU (plan input order, plan output order, the workspace). Throws UserError when the blob
  // is invalid or not of the graph shape the unit was emitted for (workers, events, ring sizes),
  // when the launch is refused (the message names the numbers) or, on a GPU, when there is no
  // device.
  MegakernelRun run(const std::vector<uint8_t>& blob, const std::vector<void*>& inputs,
                    const std::vector<void*>& outputs, void* workspace, uint64_t iterations,
                    bool trace) const;
  // `warmup` untimed, then `reps` timed launches of `iterations` iterations each, every one
  // from zeroed state: on a GPU between two CUDA events on the stream, with the blob, state and
  // tables on the device once (the state's memset precedes each start event) and the launch's
  // set-up done before the first (setup_count), so the events time the GPU's work; in emulation
  // the host time of each launch (not a GPU time). UserError when a launch trips the watchdog
  // (with its report), and as for run.
  Timing time(const std::vector<uint8_t>& blob, const std::vector<void*>& inputs,
              const std::vector<void*>& outputs, void* workspace, uint64_t iterations, int warmup,
              int reps) const;
  // The launch of `blob` on these tensors, set up once for many runs (as for run).
  std::unique_ptr<PreparedLaunch> prepare(const std::vector<uint8_t>& blob,
                                          const std::vector<void*>& inputs,
                                          const std::vector<void*>& outputs, void* workspace) const;
  // How many times the unit's launch set-up (weft_mpk_prepare: device queries, the shared-memory
  // limit, occupancy and the co-residency check) ran: once per loaded kernel, before its first
  // launch, however many launches follow.
  uint64_t setup_count() const;

 private:
  friend class PreparedLaunch;
  friend std::unique_ptr<LoadedMegakernel> build_megakernel(const std::string&, bool,
                                                            const std::string&,
                                                            const BuildOptions&);
  LoadedMegakernel() = default;
  MegakernelRun run_emulated(const std::vector<uint8_t>& blob, const DeviceGraph& graph,
                             const std::vector<void*>& inputs, const std::vector<void*>& outputs,
                             void* workspace, uint64_t iterations, bool trace) const;
  // The blob decoded; UserError when it is not of the graph shape the unit was emitted for.
  DeviceGraph check_blob(const std::vector<uint8_t>& blob) const;
  // The unit's set-up on the first call (on a GPU, with a device current); a refusal is a
  // UserError, on that call and every later one.
  void ensure_prepared() const;
  Timing time_cuda(const std::vector<uint8_t>& blob, const DeviceGraph& graph,
                   const std::vector<void*>& inputs, const std::vector<void*>& outputs,
                   void* workspace, uint64_t iterations, int warmup, int reps) const;
  MegakernelRun run_cuda(const std::vector<uint8_t>& blob, const DeviceGraph& graph,
                         const std::vector<void*>& inputs, const std::vector<void*>& outputs,
                         void* workspace, uint64_t iterations, bool trace) const;
  bool emulated_ = true;
  void* handle_ = nullptr;
  void* prepare_ = nullptr;
  void* launch_ = nullptr;
  void* state_words_ = nullptr;
  void* setup_count_ = nullptr;
  mutable std::mutex prepare_mutex_;
  mutable bool prepared_ = false;
  mutable std::string refused_;  // the set-up's refusal, when it refused
  weft_mpk::Layout layout_{};
  int ctas_ = 0;
};

// Builds `unit` (cached like every generated library) and loads it: emulated with
// options.emulation's compiler, else with nvcc for `arch` (sm_90a, sm_80). A compiler failure is
// an internal error in emulation, a UserError with nvcc's output otherwise (as for CudaProgram).
std::unique_ptr<LoadedMegakernel> build_megakernel(const std::string& unit, bool emulated,
                                                   const std::string& arch = "sm_90a",
                                                   const BuildOptions& options = {});

}  // namespace weft
