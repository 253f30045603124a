// Building generated CUDA with nvcc, caching and loading the library, running and timing it.
#include "runtime/cuda_runtime.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>
#include <sstream>

#include "core/dtype_convert.h"
#include "core/error.h"
#include "core/run_command.h"
#include "runtime/build_cache.h"

#ifdef WEFT_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace weft {

namespace fs = std::filesystem;

namespace {

constexpr const char* kNoToolkit =
    "this weft was built without the CUDA toolkit, so it has no CUDA backend; install the toolkit "
    "(nvcc, cudart) and re-run cmake";

using LaunchFn = int (*)(void* const*, void* const*, void*, void*);
using NameFn = const char* (*)();

bool is_executable(const std::string& path) {
  std::error_code ec;
  return !path.empty() && fs::is_regular_file(path, ec) && access(path.c_str(), X_OK) == 0;
}

// `nvcc --version`, once per nvcc path: part of the cache key.
std::string nvcc_version(const std::string& nvcc) {
  static std::mutex mutex;
  static std::map<std::string, std::string> versions;
  std::lock_guard lock(mutex);
  if (auto it = versions.find(nvcc); it != versions.end()) return it->second;
  std::string out;
  if (run_command(fmt::format("'{}' --version", nvcc), out) != 0)
    throw UserError(fmt::format("nvcc at {} does not run:\n{}", nvcc, out));
  return versions[nvcc] = out;
}

// The toolkit's library directory next to nvcc's bin/: an rpath, so the loaded library finds
// cuBLAS even when the loader's paths do not list the toolkit.
std::string toolkit_library_dir(const std::string& nvcc) {
  fs::path root = fs::path(nvcc).parent_path().parent_path();
  std::error_code ec;
  for (const char* lib : {"lib64", "lib"})
    if (fs::is_directory(root / lib, ec)) return (root / lib).string();
  return "";
}

// "sm_90a" -> 90; 0 when unparsable.
[[maybe_unused]] int arch_number(const std::string& arch) {
  int n = 0;
  for (char c : arch)
    if (c >= '0' && c <= '9') n = n * 10 + (c - '0');
  return n;
}

}  // namespace

bool cuda_runtime_built() {
#ifdef WEFT_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

std::string find_nvcc(const CudaBuildOptions& options) {
  if (!options.nvcc.empty()) {
    if (!is_executable(options.nvcc))
      throw UserError(fmt::format("nvcc '{}' is not an executable file", options.nvcc));
    return options.nvcc;
  }
  if (const char* env = std::getenv("WEFT_NVCC"); env && *env) {
    if (!is_executable(env))
      throw UserError(fmt::format("$WEFT_NVCC is '{}', which is not an executable file", env));
    return env;
  }
  if (is_executable("/usr/local/cuda/bin/nvcc")) return "/usr/local/cuda/bin/nvcc";
  if (const char* path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    std::string dir;
    while (std::getline(dirs, dir, ':'))
      if (!dir.empty() && is_executable(dir + "/nvcc")) return dir + "/nvcc";
  }
#ifdef WEFT_CONFIGURED_NVCC
  if (is_executable(WEFT_CONFIGURED_NVCC)) return WEFT_CONFIGURED_NVCC;
#endif
  throw UserError(
      "nvcc not found: set $WEFT_NVCC to its path, install the CUDA toolkit in /usr/local/cuda, "
      "or put nvcc on PATH");
}

const Target& target_for_device(const CudaDevice& device) {
  for (const char* name : {"H200", "H100", "A100"})
    if (device.name.find(name) != std::string::npos) {
      std::string lower = name;
      lower[0] = static_cast<char>(std::tolower(lower[0]));
      return target_by_name(lower);
    }
  return target_by_name(device.major == 8 ? "a100" : "h100");
}

std::string cuda_unavailable_reason() {
  try {
    require_cuda_device();
    return "";
  } catch (const UserError& e) {
    return e.message();
  }
}

#ifdef WEFT_HAVE_CUDA

namespace {

// Errors of the environment (driver, device, memory) are the user's to fix; any other CUDA error
// after a launch is a bug in the generated code or this runtime.
[[noreturn]] void cuda_failed(cudaError_t e, const std::string& what) {
  std::string msg = fmt::format("{}: {} ({})", what, cudaGetErrorString(e), cudaGetErrorName(e));
  // A list rather than a switch: cudaError_t has over a hundred values (-Wswitch-enum).
  static constexpr cudaError_t kEnvironment[] = {
      cudaErrorMemoryAllocation,       cudaErrorNoDevice,
      cudaErrorInsufficientDriver,     cudaErrorCallRequiresNewerDriver,
      cudaErrorNoKernelImageForDevice, cudaErrorUnsupportedPtxVersion,
      cudaErrorDevicesUnavailable,     cudaErrorSystemNotReady,
      cudaErrorInitializationError};
  if (std::find(std::begin(kEnvironment), std::end(kEnvironment), e) != std::end(kEnvironment))
    throw UserError(msg);
  WEFT_CHECK(false, "{}", msg);
}

void check(cudaError_t e, const std::string& what) {
  if (e != cudaSuccess) cuda_failed(e, what);
}

// `reps` runs of `launch` on `stream`, each between the two events (`what` names a run in errors).
Timing time_between_events(cudaStream_t stream, cudaEvent_t start, cudaEvent_t stop, int reps,
                           const std::function<void()>& launch, const std::string& what) {
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    check(cudaEventRecord(start, stream), "cudaEventRecord");
    launch();
    check(cudaEventRecord(stop, stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop), what);
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    times.push_back(ms * 1e-3);
  }
  return summarize_times(std::move(times));
}

// time_between_events with a pair of events of its own.
Timing time_with_own_events(cudaStream_t stream, int reps, const std::function<void()>& launch,
                            const std::string& what) {
  struct Events {
    cudaEvent_t start = nullptr, stop = nullptr;
    ~Events() {
      if (start) cudaEventDestroy(start);
      if (stop) cudaEventDestroy(stop);
    }
  } e;
  check(cudaEventCreate(&e.start), "cudaEventCreate");
  check(cudaEventCreate(&e.stop), "cudaEventCreate");
  return time_between_events(stream, e.start, e.stop, reps, launch, what);
}

CudaDevice query_device() {
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    cudaGetLastError();  // not sticky: leave no error behind for later calls
    throw UserError(fmt::format(
        "no usable CUDA device: cudaGetDeviceCount failed: {} ({}); is the NVIDIA driver "
        "installed and a GPU visible to this process?",
        cudaGetErrorString(e), cudaGetErrorName(e)));
  }
  if (count == 0) throw UserError("no CUDA device: cudaGetDeviceCount found none");
  CudaDevice d;
  check(cudaGetDevice(&d.ordinal), "cudaGetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, d.ordinal), "cudaGetDeviceProperties");
  d.name = prop.name;
  d.major = prop.major;
  d.minor = prop.minor;
  d.sms = prop.multiProcessorCount;
  int smem = 0;
  check(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, d.ordinal),
        "cudaDeviceGetAttribute(cudaDevAttrMaxSharedMemoryPerBlockOptin)");
  d.max_smem_per_block = smem;
  cudaDriverGetVersion(&d.driver_version);
  cudaRuntimeGetVersion(&d.runtime_version);
  return d;
}

}  // namespace

const CudaDevice& require_cuda_device() {
  static std::mutex mutex;
  static std::unique_ptr<CudaDevice> device;
  std::lock_guard lock(mutex);
  if (!device) device = std::make_unique<CudaDevice>(query_device());
  return *device;
}

struct CudaProgram::DeviceState {
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  std::vector<void*> inputs, outputs;
  void* workspace = nullptr;

  ~DeviceState() {
    // Teardown errors (e.g. after a failed kernel) are ignored: nothing can be done about them.
    for (void* p : inputs) cudaFree(p);
    for (void* p : outputs) cudaFree(p);
    if (workspace) cudaFree(workspace);
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    if (stream) cudaStreamDestroy(stream);
  }
};

CudaProgram::DeviceState& CudaProgram::device_state() const {
  if (state_) return *state_;
  const CudaDevice& dev = require_cuda_device();
  const Target* target = nullptr;
  for (const Target& t : all_targets())
    if (t.name == plan().target) target = &t;
  if (target && target->kind == TargetKind::gpu) {
    int want = arch_number(target->arch), have = dev.major * 10 + dev.minor;
    bool arch_specific = !target->arch.empty() && target->arch.back() == 'a';
    if (arch_specific ? want != have : want > have)
      throw UserError(fmt::format(
          "{} was compiled for {} ({}), but the device {} has compute capability {}.{}; "
          "choose its target with --target",
          plan().name, target->arch, target->name, dev.name, dev.major, dev.minor));
  }
  for (const KernelPlan& k : plan().kernels)
    if (!k.library && k.smem_bytes > dev.max_smem_per_block)
      throw UserError(fmt::format(
          "kernel {} of {} needs {} bytes of shared memory per block, but the device {} allows "
          "at most {} (cudaDevAttrMaxSharedMemoryPerBlockOptin)",
          k.name, plan().name, k.smem_bytes, dev.name, dev.max_smem_per_block));
  auto state = std::make_unique<DeviceState>();
  check(cudaStreamCreateWithFlags(&state->stream, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cudaEventCreate(&state->start), "cudaEventCreate");
  check(cudaEventCreate(&state->stop), "cudaEventCreate");
  auto allocate = [&](const std::string& name) {
    const PlanBuffer* t = plan().find_tensor(name);
    WEFT_CHECK(t != nullptr, "plan {} has no tensor {}", plan().name, name);
    void* p = nullptr;
    check(cudaMalloc(&p, static_cast<size_t>(t->bytes())),
          fmt::format("cudaMalloc of {} ({} bytes)", name, t->bytes()));
    return p;
  };
  for (const std::string& name : plan().inputs) state->inputs.push_back(allocate(name));
  for (const std::string& name : plan().outputs) state->outputs.push_back(allocate(name));
  if (plan().workspace_bytes > 0) {
    check(cudaMalloc(&state->workspace, static_cast<size_t>(plan().workspace_bytes)),
          fmt::format("cudaMalloc of the workspace ({} bytes)", plan().workspace_bytes));
    // NaN bytes: a temp read before it is written shows up in the results.
    check(cudaMemset(state->workspace, 0xFF, static_cast<size_t>(plan().workspace_bytes)),
          "cudaMemset");
  }
  state_ = std::move(state);
  return *state_;
}

void CudaProgram::upload(const std::vector<std::vector<float>>& inputs) const {
  DeviceState& s = device_state();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const PlanBuffer* t = plan().find_tensor(plan().inputs[i]);
    std::vector<uint8_t> bytes = encode_as(inputs[i].data(), inputs[i].size(), t->dtype);
    check(cudaMemcpy(s.inputs[i], bytes.data(), bytes.size(), cudaMemcpyHostToDevice),
          fmt::format("copying input {} to the device", plan().inputs[i]));
  }
}

void CudaProgram::launch() const {
  DeviceState& s = *state_;
  launch_raw_checked(s.inputs.data(), s.outputs.data(), s.workspace, s.stream);
}

void CudaProgram::launch_raw_checked(void* const* inputs, void* const* outputs, void* workspace,
                                     void* stream) const {
  int rc = reinterpret_cast<LaunchFn>(launch_)(inputs, outputs, workspace, stream);
  if (rc != 0)
    cuda_failed(static_cast<cudaError_t>(rc), fmt::format("weft_cuda_launch of {}", plan().name));
  check(cudaGetLastError(), fmt::format("launching {}", plan().name));
}

std::vector<std::vector<float>> CudaProgram::run_checked(
    const std::vector<std::vector<float>>& inputs) const {
  upload(inputs);
  DeviceState& s = *state_;
  // NaN bytes: an output element the program never writes cannot pass a comparison.
  for (size_t j = 0; j < plan().outputs.size(); ++j)
    check(cudaMemsetAsync(s.outputs[j], 0xFF,
                          static_cast<size_t>(plan().find_tensor(plan().outputs[j])->bytes()),
                          s.stream),
          "cudaMemsetAsync");
  launch();
  check(cudaStreamSynchronize(s.stream), fmt::format("running {}", plan().name));
  std::vector<std::vector<float>> outs;
  for (size_t j = 0; j < plan().outputs.size(); ++j) {
    const PlanBuffer* t = plan().find_tensor(plan().outputs[j]);
    std::vector<uint8_t> bytes(static_cast<size_t>(t->bytes()));
    check(cudaMemcpy(bytes.data(), s.outputs[j], bytes.size(), cudaMemcpyDeviceToHost),
          fmt::format("copying output {} to the host", plan().outputs[j]));
    std::vector<float> out(static_cast<size_t>(numel(t->shape)));
    decode_from(bytes.data(), out.size(), t->dtype, out.data());
    outs.push_back(std::move(out));
  }
  return outs;
}

Timing CudaProgram::time_checked(const std::vector<std::vector<float>>& inputs, int warmup,
                                 int reps) const {
  upload(inputs);
  DeviceState& s = *state_;
  for (int i = 0; i < warmup; ++i) launch();
  check(cudaStreamSynchronize(s.stream), fmt::format("warm-up runs of {}", plan().name));
  return time_between_events(
      s.stream, s.start, s.stop, reps, [&] { launch(); },
      fmt::format("timed run of {}", plan().name));
}

Timing time_cuda_graph(const Program& program, const std::vector<std::vector<float>>& inputs,
                       int warmup, int reps) {
  const auto* cuda = dynamic_cast<const CudaProgram*>(&program);
  if (!cuda)
    throw UserError(fmt::format("{} runs on the {} backend: only cuda programs run as CUDA graphs",
                                program.plan().name, backend_name(program.backend())));
  WEFT_CHECK(warmup >= 0 && reps >= 1, "{} warm-up runs, {} timed", warmup, reps);
  cuda->upload(inputs);
  CudaProgram::DeviceState& s = *cuda->state_;
  cuda->launch();
  check(cudaStreamSynchronize(s.stream),
        fmt::format("the launch before capturing {}", cuda->plan().name));
  struct Graph {
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    ~Graph() {
      if (exec) cudaGraphExecDestroy(exec);
      if (graph) cudaGraphDestroy(graph);
    }
  } g;
  check(cudaStreamBeginCapture(s.stream, cudaStreamCaptureModeThreadLocal),
        "cudaStreamBeginCapture");
  try {
    cuda->launch();
  } catch (...) {
    cudaStreamEndCapture(s.stream, &g.graph);
    throw;
  }
  check(cudaStreamEndCapture(s.stream, &g.graph),
        fmt::format("capturing {}'s launches as a CUDA graph", cuda->plan().name));
  check(cudaGraphInstantiate(&g.exec, g.graph, 0), "cudaGraphInstantiate");
  for (int i = 0; i < warmup; ++i) check(cudaGraphLaunch(g.exec, s.stream), "cudaGraphLaunch");
  check(cudaStreamSynchronize(s.stream),
        fmt::format("warm-up graph launches of {}", cuda->plan().name));
  return time_between_events(
      s.stream, s.start, s.stop, reps,
      [&] { check(cudaGraphLaunch(g.exec, s.stream), "cudaGraphLaunch"); },
      fmt::format("a timed graph launch of {}", cuda->plan().name));
}

double measure_copy_bandwidth(int64_t bytes, int reps) {
  require_cuda_device();
  WEFT_CHECK(bytes >= 2 && reps >= 1, "{} bytes, {} reps", bytes, reps);
  struct Buffers {
    void* a = nullptr;
    void* b = nullptr;
    ~Buffers() {
      if (a) cudaFree(a);
      if (b) cudaFree(b);
    }
  } m;
  const auto n = static_cast<size_t>(bytes);
  check(cudaMalloc(&m.a, n), "cudaMalloc for the bandwidth probe");
  check(cudaMalloc(&m.b, n), "cudaMalloc for the bandwidth probe");
  check(cudaMemset(m.a, 1, n), "cudaMemset");
  check(cudaMemcpy(m.b, m.a, n, cudaMemcpyDeviceToDevice), "cudaMemcpy (warm-up)");
  const Timing t = time_with_own_events(
      nullptr, reps,
      [&] {
        check(cudaMemcpyAsync(m.b, m.a, n, cudaMemcpyDeviceToDevice, nullptr), "cudaMemcpyAsync");
      },
      "the bandwidth probe");
  return 2.0 * static_cast<double>(bytes) / t.median_s;
}

namespace {

struct CudaGraph final : CapturedGraph {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ~CudaGraph() override {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
  }
};

class CudaDeviceImpl final : public Device {
 public:
  explicit CudaDeviceImpl(const BuildOptions& options) : Device(Backend::cuda, options) {
    require_cuda_device();
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    load_kernels();
  }
  ~CudaDeviceImpl() override {
    if (stream_) cudaStreamDestroy(stream_);
  }
  void* allocate(int64_t bytes) override {
    void* p = nullptr;
    check(cudaMalloc(&p, static_cast<size_t>(std::max<int64_t>(bytes, 1))),
          fmt::format("cudaMalloc of {} bytes", bytes));
    return p;
  }
  // cudaFree waits for the device to finish with the buffer.
  void deallocate(void* p) override { cudaFree(p); }
  void upload(void* dst, const void* src, int64_t bytes) override {
    check(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyHostToDevice, stream_),
          "copying to the device");
    // The source is pageable host memory the caller may free at once.
    check(cudaStreamSynchronize(stream_), "copying to the device");
  }
  void download(void* dst, const void* src, int64_t bytes) override {
    check(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToHost, stream_),
          "copying to the host");
    check(cudaStreamSynchronize(stream_), "copying to the host");
  }
  void copy(void* dst, const void* src, int64_t bytes) override {
    check(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice, stream_),
          "a copy on the device");
  }
  void* stream() const override { return stream_; }
  void synchronize() override { check(cudaStreamSynchronize(stream_), "running on the device"); }
  bool captures_graphs() const override { return true; }
  void begin_capture() override {
    // Relaxed: buffers are allocated (cudaMalloc) while a run is captured; the executor keeps
    // them as long as the graph, whose replays use them.
    check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed), "cudaStreamBeginCapture");
  }
  std::unique_ptr<CapturedGraph> end_capture() override {
    auto g = std::make_unique<CudaGraph>();
    check(cudaStreamEndCapture(stream_, &g->graph), "capturing the model's launches");
    check(cudaGraphInstantiate(&g->exec, g->graph, 0), "cudaGraphInstantiate");
    return g;
  }
  void abort_capture() override {
    cudaGraph_t g = nullptr;
    cudaStreamEndCapture(stream_, &g);
    if (g) cudaGraphDestroy(g);
    cudaGetLastError();
  }
  void replay(const CapturedGraph& graph) override {
    check(cudaGraphLaunch(static_cast<const CudaGraph&>(graph).exec, stream_), "cudaGraphLaunch");
  }
  Timing time_on_stream(const std::function<void()>& work, int warmup, int reps) override {
    WEFT_CHECK(reps >= 1 && warmup >= 0, "bad timing parameters");
    for (int i = 0; i < warmup; ++i) work();
    return time_with_own_events(stream_, reps, work, "a timed run on the device");
  }
  bool times_the_device() const override { return true; }

 private:
  void check_launch(int rc, const std::string& what) const override {
    if (rc != 0) cuda_failed(static_cast<cudaError_t>(rc), what);
    check(cudaGetLastError(), what);
  }
  cudaStream_t stream_ = nullptr;
};

}  // namespace

std::unique_ptr<Device> open_cuda_device(const BuildOptions& options) {
  return std::make_unique<CudaDeviceImpl>(options);
}

#else  // no CUDA toolkit at build time

std::unique_ptr<Device> open_cuda_device(const BuildOptions&) {
  throw UserError(kNoToolkit);
}

const CudaDevice& require_cuda_device() {
  throw UserError(kNoToolkit);
}

struct CudaProgram::DeviceState {};

CudaProgram::DeviceState& CudaProgram::device_state() const {
  throw UserError(kNoToolkit);
}
void CudaProgram::upload(const std::vector<std::vector<float>>&) const {
  throw UserError(kNoToolkit);
}
void CudaProgram::launch() const {
  throw UserError(kNoToolkit);
}
void CudaProgram::launch_raw_checked(void* const*, void* const*, void*, void*) const {
  throw UserError(kNoToolkit);
}
std::vector<std::vector<float>> CudaProgram::run_checked(
    const std::vector<std::vector<float>>&) const {
  throw UserError(kNoToolkit);
}
Timing CudaProgram::time_checked(const std::vector<std::vector<float>>&, int, int) const {
  throw UserError(kNoToolkit);
}

Timing time_cuda_graph(const Program&, const std::vector<std::vector<float>>&, int, int) {
  throw UserError(kNoToolkit);
}
double measure_copy_bandwidth(int64_t, int) {
  throw UserError(kNoToolkit);
}

#endif  // WEFT_HAVE_CUDA

CudaProgram::CudaProgram(const ProgramPlan& plan, std::string source)
    : Program(Backend::cuda, plan, std::move(source)) {}

// Device buffers go first (members die before the base class closes the library, which may hold
// state they depend on).
CudaProgram::~CudaProgram() = default;

std::string CudaProgram::plan_name() const {
  return name_ ? reinterpret_cast<NameFn>(name_)() : "";
}

CacheResult build_cuda_library(const std::string& source, const std::string& arch,
                               const BuildOptions& options) {
  if (!cuda_runtime_built()) throw UserError(kNoToolkit);
  const CudaBuildOptions& o = options.cuda;
  std::string nvcc = find_nvcc(o);
  std::string libdir = toolkit_library_dir(nvcc);
  std::string flags = fmt::format("{} -arch={}", o.flags, arch);
  std::string libs = o.libraries;
  if (!libdir.empty()) libs += fmt::format(" -Xlinker -rpath,{}", libdir);
  CacheBuild build;
  build.configured_dir = options.cache_dir;
  build.key_material = fmt::format("nvcc {}\n{}\n{}\n{}", nvcc, flags, libs, nvcc_version(nvcc));
  build.source = source;
  build.source_extension = ".cu";
  build.command = [&](const std::string& src, const std::string& out) {
    return fmt::format("'{}' {} -o '{}' '{}' {}", nvcc, flags, out, src, libs);
  };
  return build_cached(build);
}

std::unique_ptr<CudaProgram> build_cuda_program(const ProgramPlan& plan, const std::string& source,
                                                const BuildOptions& options) {
  if (!cuda_runtime_built()) throw UserError(kNoToolkit);
  const CudaBuildOptions& o = options.cuda;
  std::string arch = o.arch;
  if (arch.empty()) {
    const Target& t = target_by_name(plan.target);
    if (t.kind != TargetKind::gpu)
      throw UserError(fmt::format(
          "plan {} is for target '{}', which is not a GPU; lower it for a GPU target (h100, h200, "
          "a100)",
          plan.name, plan.target));
    arch = t.arch;
  }
  std::unique_ptr<CudaProgram> prog(new CudaProgram(plan, source));
  CacheResult built = build_cuda_library(source, arch, options);
  if (built.failed)
    throw UserError(fmt::format("nvcc failed to build {} (source kept at {}):\n$ {}\n{}", plan.name,
                                built.kept_source, built.command, built.log));
  prog->load(built);
  prog->launch_ = prog->symbol("weft_cuda_launch");
  prog->name_ = prog->symbol("weft_cuda_plan_name");
  if (!prog->launch_)
    throw UserError(fmt::format("{} does not export weft_cuda_launch", built.artifact));
  return prog;
}

}  // namespace weft
