// The host platform: std::atomic_ref on the protocol's words, threads, optional random delays.
#include "mpk/runtime/host_runtime.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <thread>

#include "core/error.h"
#include "mpk/runtime/runtime_proto.h"

namespace weft {

HostTensors::HostTensors(const ProgramPlan& plan) {
  for (const std::string& n : plan.inputs)
    inputs.emplace_back(static_cast<size_t>(numel(plan.find_tensor(n)->shape)), 0.0f);
  for (const std::string& n : plan.outputs)
    outputs.emplace_back(static_cast<size_t>(numel(plan.find_tensor(n)->shape)), 0.0f);
  workspace.assign(static_cast<size_t>(plan.workspace_bytes / 4 + 1), 0.0f);
  for (const PlanBuffer& t : plan.tensors) {
    if (t.role == TensorRole::input)
      table.push_back(
          inputs[std::find(plan.inputs.begin(), plan.inputs.end(), t.name) - plan.inputs.begin()]
              .data());
    else if (t.role == TensorRole::output)
      table.push_back(outputs[std::find(plan.outputs.begin(), plan.outputs.end(), t.name) -
                              plan.outputs.begin()]
                          .data());
    else
      table.push_back(workspace.data() + t.offset / 4);
  }
}

namespace {

class HostPlatform {
 public:
  HostPlatform(const CpuProgram& program, HostTensors& tensors, const HostRunOptions& options,
               const IterationHook& before, const IterationHook& after, uint32_t threads)
      : program_(program), tensors_(tensors), options_(options), before_(before), after_(after) {
    int64_t arena = 4;
    for (const KernelPlan& k : program.plan().kernels) arena = std::max(arena, k.smem_bytes);
    arenas_.assign(threads, std::vector<float>(static_cast<size_t>(arena / 4 + 1)));
    for (uint32_t i = 0; i < threads; ++i) rngs_.emplace_back(options.delay_seed * 1000003 + i);
  }

  uint64_t load_acquire(const uint64_t* p) {
    return std::atomic_ref<uint64_t>(*const_cast<uint64_t*>(p)).load(std::memory_order_acquire);
  }
  uint64_t add_release(uint64_t* p, uint64_t v) {
    return std::atomic_ref<uint64_t>(*p).fetch_add(v, std::memory_order_acq_rel);
  }
  void relax() {
    if (options_.delay_seed != 0 && rng().operator()() % 64 == 0) delay();
    std::this_thread::yield();
  }
  uint64_t clock_ns() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
  }
  void group_barrier() {}  // one thread per worker
  void run_task(uint32_t worker, const TaskDesc& t, const OpDesc& op) {
    if (options_.delay_seed != 0) delay();
    program_.run_task(tensors_.table.data(), static_cast<int>(op.kernel), t.bx, t.by, t.bz,
                      arenas_[worker].data());
    if (options_.delay_seed != 0) delay();
  }
  void before_iteration(uint64_t k) {
    if (before_) before_(k);
  }
  void after_iteration(uint64_t k) {
    if (after_) after_(k);
  }
  void tripped() {}  // the protocol's threads see the failed flag and return
  // The thread index of the caller, for its private random stream.
  static thread_local uint32_t thread_index;

 private:
  std::mt19937_64& rng() { return rngs_[thread_index]; }
  void delay() {
    auto& r = rng();
    if (r() % 2)
      std::this_thread::sleep_for(std::chrono::microseconds(r() % (options_.max_delay_us + 1)));
  }

  const CpuProgram& program_;
  HostTensors& tensors_;
  HostRunOptions options_;
  const IterationHook& before_;
  const IterationHook& after_;
  std::vector<std::vector<float>> arenas_;
  std::vector<std::mt19937_64> rngs_;
};

thread_local uint32_t HostPlatform::thread_index = 0;

}  // namespace

HostRunResult run_on_host(const ProgramPlan& plan, const CpuProgram& program,
                          const DeviceGraph& graph, HostTensors& tensors,
                          const HostRunOptions& options, const IterationHook& before,
                          const IterationHook& after) {
  WEFT_CHECK(graph.workers >= 1 && options.schedulers >= 1, "{} workers, {} schedulers",
             graph.workers, options.schedulers);
  for (const OpDesc& op : graph.ops)
    WEFT_CHECK(op.kernel < plan.kernels.size(), "the task graph names kernel {} of {}", op.kernel,
               plan.kernels.size());
  const uint32_t threads = graph.workers + options.schedulers;
  HostPlatform platform(program, tensors, options, before, after, threads);
  ProtocolMemory memory(graph, options.schedulers, options.iterations, options.trace);
  weft_mpk::Protocol<HostPlatform> protocol(
      memory.graph, memory.layout,
      weft_mpk::Config{options.schedulers, options.iterations,
                       static_cast<uint64_t>(options.watchdog_s * 1e9)},
      memory.state.data(), &memory.report, options.trace ? memory.trace.data() : nullptr, platform);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (uint32_t i = 0; i < threads; ++i)
    pool.emplace_back([&, i] {
      HostPlatform::thread_index = i;
      if (i < graph.workers)
        protocol.worker(i);
      else
        protocol.scheduler(i - graph.workers);
    });
  for (std::thread& t : pool) t.join();
  HostRunResult r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.ok = !protocol.failed();
  r.report = format_report(memory.report);
  r.trace = std::move(memory.trace);
  return r;
}

void run_sequential(const CpuProgram& program, HostTensors& tensors, uint64_t iterations,
                    const IterationHook& before, const IterationHook& after) {
  int64_t arena_bytes = 4;
  for (const KernelPlan& k : program.plan().kernels)
    arena_bytes = std::max(arena_bytes, k.smem_bytes);
  std::vector<float> arena(static_cast<size_t>(arena_bytes / 4 + 1));
  for (uint64_t k = 1; k <= iterations; ++k) {
    if (before) before(k);
    const auto& kernels = program.plan().kernels;
    for (size_t i = 0; i < kernels.size(); ++i) {
      const auto& g = kernels[i].grid;
      const int64_t blocks = kernels[i].library ? 1 : kernels[i].num_blocks();
      for (int64_t b = 0; b < blocks; ++b)
        program.run_task(tensors.table.data(), static_cast<int>(i), b % g[0], (b / g[0]) % g[1],
                         b / (g[0] * g[1]), arena.data());
    }
    if (after) after(k);
  }
}

BuildOptions host_build_options() {
  BuildOptions o;
#if defined(__SANITIZE_THREAD__)
  o.cpu.flags += " -fsanitize=thread";
#elif defined(__SANITIZE_ADDRESS__)
  o.cpu.flags += " -fsanitize=address";
#endif
  return o;
}

}  // namespace weft
