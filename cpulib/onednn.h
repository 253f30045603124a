// What the oneDNN operators share: the CPU engine and stream, f64 -> f32 copies, row-major
// memory descriptors, and a cache of primitives by their shapes and attributes.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/shape.h"
#include "core/tensor.h"
#include "cpulib/cpu_library.h"
#include "ir/attrs.h"

namespace weft::onednn {

dnnl::engine& cpu_engine();
dnnl::stream& cpu_stream();  // the calling thread's

// A row-major f32 descriptor of `shape`.
dnnl::memory::desc plain_desc(const Shape& shape);

// Sets the library's threads for the calls that follow from this thread: one below a few
// million flops, more as the work grows, at most the cores. An OpenMP team costs more than a small
// convolution gains from it, and on a busy machine a team waits for its slowest thread to get a
// core (docs/benchmarks.md: the corpus ResNet took 600 ms instead of 2.4 ms while a build ran).
// Returns the count, which the caller's primitive cache key includes (a primitive runs with the
// threads it was built for).
int use_threads_for(double flops);

// At most `threads` per call from now on (0: the cores).
void set_thread_limit(int threads);

// n values converted from f64 to f32.
void to_f32(const double* from, float* to, int64_t n);

// A primitive and its descriptor, built once per key (shapes and attributes) and reused: building
// a primitive descriptor costs more than running a small convolution.
struct Cached {
  dnnl::primitive_desc_base pd;
  dnnl::primitive prim;
  // Whether the primitive's source and destination layouts are row-major (no reorder needed).
  bool plain_src = false, plain_dst = false;
  // The same for channels-last ([N, C, H, W] stored as NHWC; 4-D convolutions).
  bool nhwc_src = false, nhwc_dst = false;
};

// A cache key: a tag and integers, as bytes (formatting one per call cost more than a small
// convolution's reorders).
class CacheKey {
 public:
  explicit CacheKey(char tag) : bytes_(1, tag) {}
  CacheKey& add(int64_t x) {
    bytes_.append(reinterpret_cast<const char*>(&x), sizeof x);
    return *this;
  }
  CacheKey& add(const std::vector<int64_t>& xs) {
    add(static_cast<int64_t>(xs.size()));
    for (int64_t x : xs) add(x);
    return *this;
  }
  const std::string& str() const { return bytes_; }

 private:
  std::string bytes_;
};

// A memory of the layout `desc()` gives over `data`: the object is made once per primitive and
// role on the calling thread and pointed at `data` at each call (making one costs more than a
// small reorder); `desc` is called only then.
dnnl::memory bound_memory(const Cached* prim, int role,
                          const std::function<dnnl::memory::desc()>& desc, void* data);
// The entry of `key`, built by `build` on first use under a lock (entries live for the process),
// or null where `build` threw dnnl::error: the library refuses these shapes.
const Cached* cached(const std::string& key, const std::function<Cached()>& build);

// `weights` (an operand whose values are of `shape`) in f32 in the layout `desc` that primitive
// `prim` takes. With an owner, made once and kept while the owner lives: entries hold it weakly,
// so a later object at the same address never finds a dead one's; without, made for this call.
dnnl::memory prepared_weights(const HostOperand& weights, const Shape& shape,
                              const dnnl::memory::desc& desc, const Cached* prim);
// Weights prepared and kept so far (tests).
size_t prepared_weights_kept();

// A memory of `shape` row-major in f32 over `operand`'s values: its own f32 values where it has
// them (read only), else converted into `scratch`.
dnnl::memory plain_memory(const HostOperand& operand, std::vector<float>& scratch);
// The same as role `role` of `prim` (bound_memory).
dnnl::memory plain_memory(const HostOperand& operand, std::vector<float>& scratch,
                          const Cached* prim, int role);
// The same with the layout `desc` (the operand's values as they are stored).
dnnl::memory operand_memory(const HostOperand& operand, std::vector<float>& scratch,
                            const Cached* prim, int role, const dnnl::memory::desc& desc);
// A 4-D f32 descriptor of `shape` ([N, C, H, W]) stored channels-last (NHWC).
dnnl::memory::desc nhwc_desc(const Shape& shape);

// The operators (cpulib/onednn_*.cpp), their results written where `into` says: false where
// the library refuses the call.
// A convolution's epilogue as oneDNN post-ops (fused_conv): the bias [1, M, 1, ...] added, then
// the residual (of the result's shape) when there is one, then the result clipped to [lo, hi],
// then SiLU.
struct ConvEpilogue {
  HostOperand bias, residual;  // residual: null shape when there is none
  double lo = 0, hi = 0;
  bool clip = false;
  bool silu = false;  // then v * sigmoid(v)
};
// `channels_last` (ChannelsLast bits, cpulib/cpu_library.h): x, the residual and the result are
// stored channels-last where it says, so a convolution feeding convolutions skips the reorders.
bool conv(const HostOperand& x, const HostOperand& weight, const Attrs& attrs,
          const F32Destination& into, const ConvEpilogue* epilogue = nullptr,
          ChannelsLast channels_last = 0);
bool matmul(const HostOperand& a, const HostOperand& b, const F32Destination& into);
// max_pool, avg_pool or global_avg_pool (`kind`) of x, channels-last where `channels_last` says.
bool pool(OpKind kind, const HostOperand& x, const Attrs& attrs, const F32Destination& into,
          ChannelsLast channels_last = 0);

}  // namespace weft::onednn
