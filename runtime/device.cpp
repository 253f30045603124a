// The device interface's shared part (the kernel library, launches), the emulated device (host
// memory, direct launches) and the factory; the CUDA device is in cuda_runtime.cpp.
#include "runtime/device.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

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

void Device::launch(const char* name, const void* args) const {
  using Entry = int (*)(const void*, void*);
  check_launch(reinterpret_cast<Entry>(kernel(name))(args, stream()), name);
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

// Host memory standing in for the device; every launch runs to completion before it returns.
class EmulatedDevice final : public Device {
 public:
  explicit EmulatedDevice(const BuildOptions& options) : Device(Backend::cuda_emulation, options) {
    load_kernels();
  }
  void* allocate(int64_t bytes) override {
    void* p = std::aligned_alloc(
        256, static_cast<size_t>((std::max<int64_t>(bytes, 1) + 255) / 256 * 256));
    if (!p) throw UserError(fmt::format("out of host memory allocating {} bytes", bytes));
    // NaN bytes in every dtype: an element a kernel never writes shows in the results.
    std::memset(p, 0xff, static_cast<size_t>(std::max<int64_t>(bytes, 1)));
    return p;
  }
  void deallocate(void* p) override { std::free(p); }
  void upload(void* dst, const void* src, int64_t bytes) override {
    std::memcpy(dst, src, static_cast<size_t>(bytes));
  }
  void download(void* dst, const void* src, int64_t bytes) override {
    std::memcpy(dst, src, static_cast<size_t>(bytes));
  }
  void copy(void* dst, const void* src, int64_t bytes) override {
    std::memmove(dst, src, static_cast<size_t>(bytes));
  }
  void* stream() const override { return nullptr; }
  void synchronize() override {}

 private:
  void check_launch(int rc, const std::string& what) const override {
    WEFT_CHECK(rc == 0, "emulated {} returned {}", what, rc);
  }
};

}  // namespace

std::unique_ptr<Device> open_device(Backend backend, const BuildOptions& options) {
  switch (backend) {
    case Backend::cuda:
      return open_cuda_device(options);
    case Backend::cuda_emulation:
      return std::make_unique<EmulatedDevice>(options);
    case Backend::cpu:
      break;
  }
  throw UserError("the cpu backend keeps tensors on the host: a device is cuda or cuda-emulation");
}

}  // namespace weft
