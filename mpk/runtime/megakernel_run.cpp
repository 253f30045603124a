// Building, loading and running persistent-kernel units: host emulation and the GPU.
#include "mpk/runtime/megakernel_run.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <chrono>
#include <cstring>

#include "core/error.h"
#include "mpk/device/megakernel_abi.cuh"
#include "mpk/runtime/cuda_error.h"
#include "runtime/build_cache.h"
#include "runtime/cuda_runtime.h"
#include "runtime/generated_library.h"
#include "runtime/timing.h"

namespace weft {

namespace {

MegakernelRun finish(const ProtocolReport& report, std::vector<TaskSpan> trace, double seconds) {
  MegakernelRun r;
  r.ok = report.kind == weft_mpk::kReportNone;
  r.report = format_report(report);
  r.trace = std::move(trace);
  r.seconds = seconds;
  return r;
}

double since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

DeviceGraph LoadedMegakernel::check_blob(const std::vector<uint8_t>& blob) const {
  DeviceGraph graph = decode_task_graph(blob, "the persistent kernel's blob");
  const weft_mpk::Layout want = weft_mpk::make_layout(view_of(graph), layout_.schedulers);
  if (want.events != layout_.events || want.workers != layout_.workers ||
      want.worker_cap != layout_.worker_cap || want.sched_cap != layout_.sched_cap)
    throw UserError(fmt::format(
        "the blob's graph ({} workers, {} events, {} JIT tasks) is not the one the persistent "
        "kernel was emitted for ({} workers, {} events, {} JIT tasks)",
        want.workers, want.events, want.worker_cap - 1, layout_.workers, layout_.events,
        layout_.worker_cap - 1));
  return graph;
}

LoadedMegakernel::~LoadedMegakernel() {
  if (handle_) dlclose(handle_);
}

std::unique_ptr<LoadedMegakernel> build_megakernel(const std::string& unit, bool emulated,
                                                   const std::string& arch,
                                                   const BuildOptions& options) {
  CacheBuild build;
  build.configured_dir = options.cache_dir;
  build.source = unit;
  build.source_extension = ".cu";
  if (emulated) {
    const EmulationBuildOptions& o = options.emulation;
    build.key_material = o.compiler + " " + o.flags + " (host emulation)";
    build.command = [&](const std::string& src, const std::string& out) {
      return fmt::format("{} {} -o '{}' '{}'", o.compiler, o.flags, out, src);
    };
  } else {
    if (!cuda_runtime_built())
      throw UserError(
          "this weft was built without the CUDA toolkit, so it cannot build a "
          "persistent kernel for a GPU");
    const std::string nvcc = find_nvcc(options.cuda);
    const std::string flags = fmt::format("{} -arch={}", options.cuda.flags, arch);
    build.key_material = fmt::format("nvcc {} {}", nvcc, flags);
    build.command = [nvcc, flags](const std::string& src, const std::string& out) {
      return fmt::format("'{}' {} -o '{}' '{}'", nvcc, flags, out, src);
    };
  }
  CacheResult r = build_cached(build);
  if (r.failed) {
    const std::string msg = fmt::format(
        "the persistent kernel did not compile ({}; source kept at "
        "{}):\n{}",
        r.command, r.kept_source, r.log);
    if (emulated) WEFT_CHECK(false, "{}", msg);
    throw UserError(msg);
  }
  std::unique_ptr<LoadedMegakernel> k(new LoadedMegakernel());
  k->emulated_ = emulated;
  k->handle_ = open_generated_library(r.artifact);
  k->prepare_ = dlsym(k->handle_, "weft_mpk_prepare");
  k->launch_ = dlsym(k->handle_, "weft_mpk_launch");
  k->state_words_ = dlsym(k->handle_, "weft_mpk_state_words");
  k->setup_count_ = dlsym(k->handle_, "weft_mpk_setup_count");
  void* grid = dlsym(k->handle_, "weft_mpk_grid");
  void* layout = dlsym(k->handle_, "weft_mpk_layout_of");
  WEFT_CHECK(k->prepare_ && k->launch_ && k->state_words_ && k->setup_count_ && grid && layout,
             "{} lacks the weft_mpk_* entry points", r.artifact);
  reinterpret_cast<WeftMpkLayoutFn>(layout)(&k->layout_);
  int threads = 0, smem = 0;
  reinterpret_cast<WeftMpkGridFn>(grid)(&k->ctas_, &threads, &smem);
  return k;
}

void LoadedMegakernel::ensure_prepared() const {
  std::lock_guard<std::mutex> lock(prepare_mutex_);
  if (!prepared_) {
    char error[512] = {0};
    const int rc = reinterpret_cast<WeftMpkPrepareFn>(prepare_)(error, sizeof error);
    if (rc == WEFT_MPK_REFUSED) {
      refused_ = error;
    } else if (emulated_) {
      WEFT_CHECK(rc == 0, "the emulated persistent kernel's set-up returned {}", rc);
    } else {
#ifdef WEFT_HAVE_CUDA
      check(static_cast<cudaError_t>(rc), "setting up the persistent kernel's launch");
#endif
    }
    prepared_ = true;
  }
  if (!refused_.empty()) throw UserError(refused_);
}

uint64_t LoadedMegakernel::setup_count() const {
  return reinterpret_cast<WeftMpkSetupCountFn>(setup_count_)();
}

namespace {
// weft_mpk_launch's result: 0, or a failure (a launch before the set-up is weft's bug).
void check_launch(int rc, const char* error, bool emulated) {
  WEFT_CHECK(rc != WEFT_MPK_UNPREPARED, "{}", error);
  if (emulated) WEFT_CHECK(rc == 0, "the emulated persistent kernel returned {}", rc);
#ifdef WEFT_HAVE_CUDA
  check(static_cast<cudaError_t>(rc), "launching the persistent kernel");
#endif
}
}  // namespace

MegakernelRun LoadedMegakernel::run(const std::vector<uint8_t>& blob,
                                    const std::vector<void*>& inputs,
                                    const std::vector<void*>& outputs, void* workspace,
                                    uint64_t iterations, bool trace) const {
  WEFT_CHECK(iterations >= 1, "{} iterations", iterations);
  const DeviceGraph graph = check_blob(blob);
  return emulated_ ? run_emulated(blob, graph, inputs, outputs, workspace, iterations, trace)
                   : run_cuda(blob, graph, inputs, outputs, workspace, iterations, trace);
}

Timing LoadedMegakernel::time(const std::vector<uint8_t>& blob, const std::vector<void*>& inputs,
                              const std::vector<void*>& outputs, void* workspace,
                              uint64_t iterations, int warmup, int reps) const {
  WEFT_CHECK(warmup >= 0 && reps >= 1, "{} warm-up runs, {} timed", warmup, reps);
  const DeviceGraph graph = check_blob(blob);
  if (!emulated_)
    return time_cuda(blob, graph, inputs, outputs, workspace, iterations, warmup, reps);
  return time_runs(
      [&] {
        MegakernelRun r = run_emulated(blob, graph, inputs, outputs, workspace, iterations, false);
        if (!r.ok) throw UserError(fmt::format("the persistent kernel tripped: {}", r.report));
      },
      warmup, reps);
}

MegakernelRun LoadedMegakernel::run_emulated(const std::vector<uint8_t>& blob,
                                             const DeviceGraph& graph,
                                             const std::vector<void*>& inputs,
                                             const std::vector<void*>& outputs, void* workspace,
                                             uint64_t iterations, bool trace) const {
  // The blob is read in place as arrays of 4-byte words: copy it to aligned memory.
  std::vector<uint32_t> aligned_blob((blob.size() + 3) / 4);
  std::memcpy(aligned_blob.data(), blob.data(), blob.size());
  std::vector<uint64_t> state(reinterpret_cast<WeftMpkStateWordsFn>(state_words_)(), 0);
  ProtocolReport report{};
  std::vector<TaskSpan> spans(trace ? iterations * graph.tasks.size() : 0, TaskSpan{});
  WeftMpkArgs a{reinterpret_cast<const unsigned char*>(aligned_blob.data()),
                state.data(),
                inputs.data(),
                outputs.data(),
                static_cast<unsigned char*>(workspace),
                &report,
                trace ? spans.data() : nullptr,
                iterations};
  ensure_prepared();
  char error[512] = {0};
  const auto start = std::chrono::steady_clock::now();
  const int rc = reinterpret_cast<WeftMpkLaunchFn>(launch_)(&a, nullptr, error, sizeof error);
  check_launch(rc, error, true);
  return finish(report, std::move(spans), since(start));
}

#ifdef WEFT_HAVE_CUDA

namespace {

// Device copies of the host-side arrays a run needs, freed on every path out.
struct DeviceRun {
  std::vector<void*> allocations;
  ProtocolReport* report = nullptr;  // mapped pinned memory
  ~DeviceRun() {
    for (void* p : allocations) cudaFree(p);
    if (report) cudaFreeHost(report);
  }
  void* copy(const void* data, size_t bytes, const char* what) {
    void* p = nullptr;
    check(cudaMalloc(&p, bytes == 0 ? 8 : bytes), fmt::format("cudaMalloc of the {}", what));
    allocations.push_back(p);
    if (data)
      check(cudaMemcpy(p, data, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
    else
      check(cudaMemset(p, 0, bytes), "cudaMemset");
    return p;
  }
};

// One launch's device side, set up once and launched any number of times: the blob, the zeroed
// state, the pointer tables, the report in mapped pinned memory and, for traced runs, the trace.
struct DeviceLaunch {
  DeviceRun d;
  WeftMpkArgs args{};
  size_t state_bytes = 0;
  size_t spans = 0;  // spans the next launch records (args.trace holds them), 0: untraced
  // The trace buffer, kept across traced runs and grown when a run needs more.
  struct TraceBuffer {
    TaskSpan* p = nullptr;
    size_t capacity = 0;
    ~TraceBuffer() {
      if (p) cudaFree(p);
    }
  } trace_buffer;

  DeviceLaunch(const std::vector<uint8_t>& blob, size_t state_words,
               const std::vector<void*>& inputs, const std::vector<void*>& outputs, void* workspace,
               uint64_t iterations, size_t spans_wanted) {
    state_bytes = state_words * 8;
    check(cudaHostAlloc(reinterpret_cast<void**>(&d.report), sizeof(ProtocolReport),
                        cudaHostAllocMapped),
          "cudaHostAlloc of the watchdog report");
    std::memset(d.report, 0, sizeof(ProtocolReport));
    ProtocolReport* device_report = nullptr;
    check(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_report), d.report, 0),
          "cudaHostGetDevicePointer");
    args = WeftMpkArgs{static_cast<const unsigned char*>(d.copy(blob.data(), blob.size(), "blob")),
                       static_cast<uint64_t*>(d.copy(nullptr, state_bytes, "protocol state")),
                       static_cast<void* const*>(
                           d.copy(inputs.data(), inputs.size() * sizeof(void*), "input table")),
                       static_cast<void* const*>(
                           d.copy(outputs.data(), outputs.size() * sizeof(void*), "output table")),
                       static_cast<unsigned char*>(workspace),
                       device_report,
                       nullptr,
                       iterations};
    trace_next(spans_wanted);
  }

  // The next launch records `n` spans (0: none): the buffer grown to fit and zeroed, so a span
  // a trip left unwritten reads as end 0.
  void trace_next(size_t n) {
    spans = n;
    args.trace = nullptr;
    if (n == 0) return;
    if (n > trace_buffer.capacity) {
      if (trace_buffer.p) cudaFree(trace_buffer.p);
      trace_buffer.p = nullptr;
      trace_buffer.capacity = 0;
      check(cudaMalloc(reinterpret_cast<void**>(&trace_buffer.p), n * sizeof(TaskSpan)),
            "cudaMalloc of the trace");
      trace_buffer.capacity = n;
    }
    check(cudaMemset(trace_buffer.p, 0, n * sizeof(TaskSpan)), "cudaMemset of the trace");
    args.trace = trace_buffer.p;
  }

  // Zeroes the state (every launch starts from zero counters), then launches on the default
  // stream; `launch` is the unit's weft_mpk_launch, which only launches (the unit's set-up ran
  // before), so the events around it time the GPU's work.
  void launch(void* launch_fn, cudaEvent_t start = nullptr, cudaEvent_t stop = nullptr) {
    check(cudaMemsetAsync(args.state, 0, state_bytes, nullptr), "cudaMemsetAsync of the state");
    if (start) check(cudaEventRecord(start, nullptr), "cudaEventRecord");
    char error[512] = {0};
    const int rc =
        reinterpret_cast<WeftMpkLaunchFn>(launch_fn)(&args, nullptr, error, sizeof error);
    if (stop) check(cudaEventRecord(stop, nullptr), "cudaEventRecord");
    check_launch(rc, error, false);
  }

  // After a synchronization: the trip's report, formatted, or empty.
  std::string tripped() const {
    return d.report->kind != weft_mpk::kReportNone ? format_report(*d.report) : std::string();
  }
};

}  // namespace

// One launch of `l` and its wait: the run, the trace copied back when `l` has one.
MegakernelRun launch_and_wait(DeviceLaunch& l, void* launch_fn) {
  const auto start = std::chrono::steady_clock::now();
  l.launch(launch_fn);
  const cudaError_t done = cudaDeviceSynchronize();
  const double seconds = since(start);
  // A trip traps: the run fails, and the report in host memory says why.
  if (l.d.report->kind != weft_mpk::kReportNone) return finish(*l.d.report, {}, seconds);
  check(done, "running the persistent kernel");
  std::vector<TaskSpan> host_spans(l.spans);
  if (l.spans > 0)
    check(cudaMemcpy(host_spans.data(), l.args.trace, l.spans * sizeof(TaskSpan),
                     cudaMemcpyDeviceToHost),
          "copying the trace");
  return finish(*l.d.report, std::move(host_spans), seconds);
}

MegakernelRun LoadedMegakernel::run_cuda(const std::vector<uint8_t>& blob, const DeviceGraph& graph,
                                         const std::vector<void*>& inputs,
                                         const std::vector<void*>& outputs, void* workspace,
                                         uint64_t iterations, bool trace) const {
  require_cuda_device();
  ensure_prepared();
  DeviceLaunch l(blob, reinterpret_cast<WeftMpkStateWordsFn>(state_words_)(), inputs, outputs,
                 workspace, iterations, trace ? iterations * graph.tasks.size() : 0);
  return launch_and_wait(l, launch_);
}

Timing LoadedMegakernel::time_cuda(const std::vector<uint8_t>& blob, const DeviceGraph&,
                                   const std::vector<void*>& inputs,
                                   const std::vector<void*>& outputs, void* workspace,
                                   uint64_t iterations, int warmup, int reps) const {
  require_cuda_device();
  ensure_prepared();
  DeviceLaunch l(blob, reinterpret_cast<WeftMpkStateWordsFn>(state_words_)(), inputs, outputs,
                 workspace, iterations, 0);
  struct Events {
    cudaEvent_t start = nullptr, stop = nullptr;
    ~Events() {
      if (start) cudaEventDestroy(start);
      if (stop) cudaEventDestroy(stop);
    }
  } e;
  check(cudaEventCreate(&e.start), "cudaEventCreate");
  check(cudaEventCreate(&e.stop), "cudaEventCreate");
  auto synchronize = [&](const char* what) {
    const cudaError_t done = cudaDeviceSynchronize();
    const std::string report = l.tripped();
    if (!report.empty()) throw UserError(fmt::format("the persistent kernel tripped: {}", report));
    check(done, what);
  };
  for (int i = 0; i < warmup; ++i) l.launch(launch_);
  synchronize("warm-up launches of the persistent kernel");
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    l.launch(launch_, e.start, e.stop);
    synchronize("a timed launch of the persistent kernel");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, e.start, e.stop), "cudaEventElapsedTime");
    times.push_back(ms * 1e-3);
  }
  return summarize_times(std::move(times));
}

#else

MegakernelRun LoadedMegakernel::run_cuda(const std::vector<uint8_t>&, const DeviceGraph&,
                                         const std::vector<void*>&, const std::vector<void*>&,
                                         void*, uint64_t, bool) const {
  throw UserError("this weft was built without the CUDA toolkit");
}

Timing LoadedMegakernel::time_cuda(const std::vector<uint8_t>&, const DeviceGraph&,
                                   const std::vector<void*>&, const std::vector<void*>&, void*,
                                   uint64_t, int, int) const {
  throw UserError("this weft was built without the CUDA toolkit");
}

#endif

struct PreparedLaunch::Impl {
  const LoadedMegakernel* kernel = nullptr;
  std::vector<uint8_t> blob;
  DeviceGraph graph;
  std::vector<void*> inputs, outputs;
  void* workspace = nullptr;
#ifdef WEFT_HAVE_CUDA
  std::unique_ptr<DeviceLaunch> device;  // on a GPU
#endif
};

PreparedLaunch::PreparedLaunch(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PreparedLaunch::~PreparedLaunch() = default;

std::unique_ptr<PreparedLaunch> LoadedMegakernel::prepare(const std::vector<uint8_t>& blob,
                                                          const std::vector<void*>& inputs,
                                                          const std::vector<void*>& outputs,
                                                          void* workspace) const {
  auto impl = std::make_unique<PreparedLaunch::Impl>();
  impl->kernel = this;
  impl->blob = blob;
  impl->graph = check_blob(blob);
  impl->inputs = inputs;
  impl->outputs = outputs;
  impl->workspace = workspace;
  if (!emulated_) {
#ifdef WEFT_HAVE_CUDA
    require_cuda_device();
    ensure_prepared();
    impl->device =
        std::make_unique<DeviceLaunch>(blob, reinterpret_cast<WeftMpkStateWordsFn>(state_words_)(),
                                       inputs, outputs, workspace, 1, 0);
#else
    throw UserError("this weft was built without the CUDA toolkit");
#endif
  }
  return std::unique_ptr<PreparedLaunch>(new PreparedLaunch(std::move(impl)));
}

MegakernelRun PreparedLaunch::run(uint64_t iterations, bool trace) {
  WEFT_CHECK(iterations >= 1, "{} iterations", iterations);
  Impl& p = *impl_;
  if (p.kernel->emulated())
    return p.kernel->run_emulated(p.blob, p.graph, p.inputs, p.outputs, p.workspace, iterations,
                                  trace);
#ifdef WEFT_HAVE_CUDA
  DeviceLaunch& l = *p.device;
  l.args.iterations = iterations;
  l.trace_next(trace ? iterations * p.graph.tasks.size() : 0);
  return launch_and_wait(l, p.kernel->launch_);
#else
  throw UserError("this weft was built without the CUDA toolkit");
#endif
}

}  // namespace weft
