// The shared parts of the oneDNN operators: one engine and stream for the process, operands in
// f32 (converted from the VM's f64 where they are not in its f32 lane), and the primitive cache.
#include "cpulib/onednn.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>

#include "core/parallel.h"

namespace weft::onednn {

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& cpu_stream() {
  // One per thread: a stream is not for several threads at once (VMs may run side by side).
  thread_local dnnl::stream stream(cpu_engine());
  return stream;
}

dnnl::memory::desc plain_desc(const Shape& shape) {
  dnnl::memory::dims dims(shape.begin(), shape.end()), strides(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

namespace {

// One thread: a conversion is bound by memory bandwidth, and waking another pool's threads beside
// the library's OpenMP team costs more than it saves at these sizes.
template <class From, class To>
void convert(const From* from, To* to, int64_t n) {
  for (int64_t i = 0; i < n; ++i) to[i] = static_cast<To>(from[i]);
}

std::atomic<int> thread_limit{0};

}  // namespace

void set_thread_limit(int threads) {
  thread_limit.store(std::max(threads, 0));
}

int use_threads_for(double flops) {
  // OpenMP's setter, found in the process (oneDNN loads the runtime): no link dependency of our
  // own on one OpenMP runtime.
  using SetThreads = void (*)(int);
  static const auto set_threads =
      reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  if (!set_threads) return 0;              // no OpenMP runtime: the library's own choice
  constexpr double kFlopsPerThread = 8e6;  // about half a millisecond of one AVX2 core
  const int limit = thread_limit.load() > 0 ? thread_limit.load() : hardware_threads();
  const int threads =
      static_cast<int>(std::clamp(flops / kFlopsPerThread, 1.0, static_cast<double>(limit)));
  set_threads(threads);
  return threads;
}

void to_f32(const double* from, float* to, int64_t n) {
  convert(from, to, n);
}

namespace {

// The operand's f32 values: its own, or converted into `scratch`.
float* f32_values(const HostOperand& operand, std::vector<float>& scratch) {
  if (operand.f32) return const_cast<float*>(operand.f32);  // the library only reads a source
  scratch.resize(static_cast<size_t>(numel(*operand.shape)));
  to_f32(operand.f64, scratch.data(), numel(*operand.shape));
  return scratch.data();
}

}  // namespace

dnnl::memory plain_memory(const HostOperand& operand, std::vector<float>& scratch) {
  return dnnl::memory(plain_desc(*operand.shape), cpu_engine(), f32_values(operand, scratch));
}

dnnl::memory plain_memory(const HostOperand& operand, std::vector<float>& scratch,
                          const Cached* prim, int role) {
  return bound_memory(
      prim, role, [&] { return plain_desc(*operand.shape); }, f32_values(operand, scratch));
}

dnnl::memory operand_memory(const HostOperand& operand, std::vector<float>& scratch,
                            const Cached* prim, int role, const dnnl::memory::desc& desc) {
  return bound_memory(
      prim, role, [&] { return desc; }, f32_values(operand, scratch));
}

dnnl::memory::desc nhwc_desc(const Shape& shape) {
  return dnnl::memory::desc(dnnl::memory::dims(shape.begin(), shape.end()),
                            dnnl::memory::data_type::f32, dnnl::memory::format_tag::nhwc);
}

dnnl::memory bound_memory(const Cached* prim, int role,
                          const std::function<dnnl::memory::desc()>& desc, void* data) {
  thread_local std::map<std::pair<const Cached*, int>, dnnl::memory> made;
  auto [it, fresh] = made.try_emplace({prim, role});
  if (fresh)
    it->second = dnnl::memory(desc(), cpu_engine(), data);
  else
    it->second.set_data_handle(data);
  return it->second;
}

const Cached* cached(const std::string& key, const std::function<Cached()>& build) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<Cached>> entries;
  std::lock_guard lock(mutex);
  auto it = entries.find(key);
  if (it == entries.end()) {
    std::unique_ptr<Cached> entry;
    try {
      entry = std::make_unique<Cached>(build());
    } catch (const dnnl::error&) {
      // The library refuses these shapes or attributes: remembered, so the caller's own code
      // takes every later call at once.
    }
    it = entries.emplace(key, std::move(entry)).first;
  }
  return it->second.get();
}

namespace {

struct Prepared {
  std::weak_ptr<const void> owner;
  dnnl::memory memory;
};
std::mutex prepared_mutex;
std::map<std::pair<const void*, const Cached*>, Prepared> prepared;

}  // namespace

dnnl::memory prepared_weights(const HostOperand& weights, const Shape& shape,
                              const dnnl::memory::desc& desc, const Cached* prim) {
  auto make = [&] {
    std::vector<float> scratch;
    dnnl::memory plain = plain_memory(weights, scratch);
    // The same values viewed with `shape` (a grouped convolution's [g, M/g, ...]).
    plain = dnnl::memory(plain_desc(shape), cpu_engine(), plain.get_data_handle());
    dnnl::memory out(desc, cpu_engine());  // owns its buffer
    dnnl::reorder(plain, out).execute(cpu_stream(), plain, out);
    cpu_stream().wait();
    return out;
  };
  if (!weights.owner) return make();
  const auto key = std::make_pair(weights.owner.get(), prim);
  {
    std::lock_guard lock(prepared_mutex);
    auto it = prepared.find(key);
    if (it != prepared.end() && it->second.owner.lock() == weights.owner) return it->second.memory;
  }
  dnnl::memory made = make();
  std::lock_guard lock(prepared_mutex);
  std::erase_if(prepared, [](const auto& e) { return e.second.owner.expired(); });
  prepared[key] = Prepared{weights.owner, made};
  return made;
}

size_t prepared_weights_kept() {
  std::lock_guard lock(prepared_mutex);
  return prepared.size();
}

}  // namespace weft::onednn
