// The device interface's shared part (the kernel library, launches), the emulated device (host
// memory, direct launches, optionally an emulated graph capture) and the factory; the CUDA device
// is in cuda_runtime.cpp.
#include "runtime/device.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <set>
#include <vector>

#include "codegen/cuda/emit_model_kernels.h"
#include "core/error.h"
#include "runtime/cuda_runtime.h"
#include "runtime/emulated_program.h"
#include "runtime/generated_library.h"

namespace weft {

CapturedGraph::~CapturedGraph() = default;

Device::Device(Backend backend, const BuildOptions& options)
    : options_(options), backend_(backend) {}

Device::~Device() {
  if (library_) dlclose(library_);
}

void Device::load_kernels() {
  CacheResult built;
  switch (backend_) {
    case Backend::cuda:
      built = build_cuda_library(model_kernels_source(),
                                 target_for_device(require_cuda_device()).arch, options_);
      break;
    case Backend::cuda_emulation:
      built = build_emulated_library(model_kernels_source(), options_);
      break;
    case Backend::cpu:
      WEFT_FAIL("the cpu backend has no device");
  }
  WEFT_CHECK(!built.failed, "the model kernel library did not compile ({}; source kept at {}):\n{}",
             built.command, built.kept_source, built.log);
  library_ = open_generated_library(built.artifact);
}

void* Device::kernel(const char* name) const {
  void* p = library_ ? dlsym(library_, name) : nullptr;
  WEFT_CHECK(p != nullptr, "the model kernel library has no {}", name);
  return p;
}

void Device::launch(const char* name, const void* args, size_t args_bytes) {
  using Entry = int (*)(const void*, void*);
  auto entry = reinterpret_cast<Entry>(kernel(name));
  if (!records_work()) {
    check_launch(entry(args, stream()), name);
    return;
  }
  // Recorded: the caller's struct is gone by the replays.
  const auto* bytes = static_cast<const unsigned char*>(args);
  enqueue(
      [this, entry, kept = std::vector<unsigned char>(bytes, bytes + args_bytes),
       what = std::string(name)](void* stream) { check_launch(entry(kept.data(), stream), what); });
}

void Device::begin_capture() {
  WEFT_FAIL("the {} device captures no graphs", backend_name(backend_));
}
std::unique_ptr<CapturedGraph> Device::end_capture() {
  WEFT_FAIL("the {} device captures no graphs", backend_name(backend_));
}
void Device::abort_capture() {}
void Device::replay(const CapturedGraph&) {
  WEFT_FAIL("the {} device replays no graphs", backend_name(backend_));
}

Timing Device::time_on_stream(const std::function<void()>& work, int warmup, int reps) {
  return time_runs(work, warmup, reps);
}

namespace {

// The emulated graph: the work recorded while capturing, in order, and the buffers allocated
// meanwhile (registered with the device as the graph's while it lives).
struct EmulatedGraph final : CapturedGraph {
  std::vector<std::function<void()>> work;
  std::set<void*> allocated;
  std::shared_ptr<std::set<void*>> graph_owned;  // the device's registry
  ~EmulatedGraph() override {
    for (void* p : allocated) graph_owned->erase(p);
  }
};

// Host memory standing in for the device; every launch runs to completion before it returns,
// except, with graph capture emulated, work issued while capturing: recorded and run at replays.
class EmulatedDevice final : public Device {
 public:
  EmulatedDevice(const BuildOptions& options, bool emulate_graph_capture)
      : Device(Backend::cuda_emulation, options), emulate_graph_capture_(emulate_graph_capture) {
    load_kernels();
  }
  ~EmulatedDevice() override {
    capture_.reset();
    for (auto* list : {&freed_while_owned_, &reported_})
      for (void* p : *list) std::free(p);
  }
  void* allocate(int64_t bytes) override {
    void* p = std::aligned_alloc(
        256, static_cast<size_t>((std::max<int64_t>(bytes, 1) + 255) / 256 * 256));
    if (!p) throw UserError(fmt::format("out of host memory allocating {} bytes", bytes));
    // NaN bytes in every dtype: an element a kernel never writes shows in the results.
    std::memset(p, 0xff, static_cast<size_t>(std::max<int64_t>(bytes, 1)));
    if (capture_) {
      capture_->allocated.insert(p);
      graph_owned_->insert(p);
    }
    return p;
  }
  // Called from buffer destructors, so a misuse is reported by the next capture call or replay
  // (the memory stays allocated until then: the graph's replays must not run on freed memory).
  void deallocate(void* p) override {
    if (!graph_owned_->count(p)) {
      std::free(p);
      return;
    }
    freed_while_owned_.push_back(p);
  }
  void upload(void* dst, const void* src, int64_t bytes) override {
    require_not_capturing("a copy to the device");
    std::memcpy(dst, src, static_cast<size_t>(bytes));
  }
  void download(void* dst, const void* src, int64_t bytes) override {
    require_not_capturing("a copy to the host");
    std::memcpy(dst, src, static_cast<size_t>(bytes));
  }
  void copy(void* dst, const void* src, int64_t bytes) override {
    enqueue([=](void*) { std::memmove(dst, src, static_cast<size_t>(bytes)); });
  }
  void* stream() const override { return nullptr; }
  void synchronize() override { require_not_capturing("a wait for the stream"); }
  void enqueue(std::function<void(void* stream)> work) override {
    if (capture_)
      capture_->work.push_back([work = std::move(work)] { work(nullptr); });
    else
      work(nullptr);
  }

  bool captures_graphs() const override { return emulate_graph_capture_; }
  void begin_capture() override {
    if (!emulate_graph_capture_) Device::begin_capture();
    require_not_capturing("beginning a capture");
    report_misuse();
    capture_ = std::make_unique<EmulatedGraph>();
    capture_->graph_owned = graph_owned_;
  }
  std::unique_ptr<CapturedGraph> end_capture() override {
    WEFT_CHECK(capture_ != nullptr, "ending a capture that was not begun");
    std::unique_ptr<EmulatedGraph> g = std::move(capture_);
    report_misuse();
    return g;
  }
  // An abandoned capture has no replays: what it allocated and freed meanwhile is freed now.
  void abort_capture() override {
    if (!capture_) return;
    std::erase_if(freed_while_owned_, [&](void* p) {
      if (!capture_->allocated.count(p)) return false;
      std::free(p);
      return true;
    });
    capture_.reset();
  }
  void replay(const CapturedGraph& graph) override {
    require_not_capturing("a replay");
    report_misuse();
    for (const auto& work : static_cast<const EmulatedGraph&>(graph).work) work();
  }

 private:
  void check_launch(int rc, const std::string& what) const override {
    WEFT_CHECK(rc == 0, "emulated {} returned {}", what, rc);
  }
  bool records_work() const override { return capture_ != nullptr; }
  // A stream capture would fail on it (a synchronizing call, or a capture nested in one).
  void require_not_capturing(const char* what) const {
    WEFT_CHECK(capture_ == nullptr, "{} while capturing a graph", what);
  }
  // Reports buffers freed while a graph needed them, once (they stay allocated until the
  // device closes: a replay after the error must not run on freed memory either).
  void report_misuse() {
    const size_t freed_too_early = freed_while_owned_.size();
    reported_.insert(reported_.end(), freed_while_owned_.begin(), freed_while_owned_.end());
    freed_while_owned_.clear();
    WEFT_CHECK(freed_too_early == 0,
               "{} device buffers allocated while capturing a graph were freed while it needs "
               "them: its replays would read and write freed memory",
               freed_too_early);
  }

  bool emulate_graph_capture_;
  std::unique_ptr<EmulatedGraph> capture_;  // while capturing
  // The buffers allocated by a live graph's capture (or the capture under way).
  std::shared_ptr<std::set<void*>> graph_owned_ = std::make_shared<std::set<void*>>();
  std::vector<void*> freed_while_owned_;  // freed too early, not yet reported
  std::vector<void*> reported_;           // freed too early, reported; freed when the device closes
};

}  // namespace

std::unique_ptr<Device> open_device(Backend backend, const BuildOptions& options,
                                    bool emulate_graph_capture) {
  switch (backend) {
    case Backend::cuda:
      return open_cuda_device(options);
    case Backend::cuda_emulation:
      return std::make_unique<EmulatedDevice>(options, emulate_graph_capture);
    case Backend::cpu:
      break;
  }
  throw UserError("the cpu backend keeps tensors on the host: a device is cuda or cuda-emulation");
}

}  // namespace weft
