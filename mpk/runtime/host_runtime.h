// The host platform of the task-graph protocol: workers and schedulers are std::threads, task
// bodies are the CPU backend's block functions (CpuProgram::run_task), counters are atomic words.
// ThreadSanitizer sees every access of every body when the generated code is built with the
// process's sanitizer (host_build_options).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lower/plan.h"
#include "mpk/encode.h"
#include "mpk/runtime/runtime_proto.h"
#include "runtime/cpu_program.h"

namespace weft {

// The device tensors of a CPU plan as host memory: inputs (the caller fills them), outputs and
// the workspace, and the tensor table in plan order that task bodies index.
struct HostTensors {
  explicit HostTensors(const ProgramPlan& plan);
  HostTensors(const HostTensors&) = delete;
  HostTensors& operator=(const HostTensors&) = delete;
  std::vector<std::vector<float>> inputs, outputs;
  std::vector<float> workspace;
  std::vector<float*> table;
};

struct HostRunOptions {
  uint32_t schedulers = 1;
  uint64_t iterations = 1;
  double watchdog_s = 10;
  // Nonzero: seeded random sleeps (up to max_delay_us) around task bodies and inside spins, to
  // shake out orderings the protocol must not depend on.
  uint64_t delay_seed = 0;
  int max_delay_us = 200;
  // Record every task's span (HostRunResult::trace).
  bool trace = false;
};

struct HostRunResult {
  bool ok = true;
  std::string report;  // the watchdog's (or protocol check's) message when !ok
  double seconds = 0;
  // With HostRunOptions::trace: per iteration and task (index (k - 1) * tasks + t), its start and
  // end (steady_clock ns, body and group barrier) and worker.
  std::vector<TaskSpan> trace;
};

using IterationHook = std::function<void(uint64_t iteration)>;

// Runs `options.iterations` iterations of `graph` (a decoded blob compiled from `plan`) with one
// thread per worker and per scheduler. before(k) runs on scheduler 0 before iteration k (from 1)
// starts, after(k) once its end event fired: between iterations nothing else runs, so they may
// read outputs and rewrite inputs.
HostRunResult run_on_host(const ProgramPlan& plan, const CpuProgram& program,
                          const DeviceGraph& graph, HostTensors& tensors,
                          const HostRunOptions& options, const IterationHook& before = {},
                          const IterationHook& after = {});

// The reference: each iteration runs the program's kernels one after another on the calling
// thread, each block in order (the block functions weft_main's grid wrapper runs, without its
// thread pool, which ThreadSanitizer cannot see into), with the same hooks.
void run_sequential(const CpuProgram& program, HostTensors& tensors, uint64_t iterations,
                    const IterationHook& before = {}, const IterationHook& after = {});

// CPU build options whose generated code carries this process's sanitizer (thread or address),
// so the sanitizer sees the task bodies' memory accesses too.
BuildOptions host_build_options();

}  // namespace weft
