// What the oneDNN operators share: the CPU engine and stream, f64 <-> f32 copies, row-major
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

// n values converted from f64 to f32 and back.
void to_f32(const double* from, float* to, int64_t n);
void to_f64(const float* from, double* to, int64_t n);

// A primitive and its descriptor, built once per key (shapes and attributes) and reused: building
// a primitive descriptor costs more than running a small convolution.
struct Cached {
  dnnl::primitive_desc_base pd;
  dnnl::primitive prim;
};
// The entry of `key`, built by `build` on first use under a lock (entries live for the process),
// or null where `build` threw dnnl::error: the library refuses these shapes.
const Cached* cached(const std::string& key, const std::function<Cached()>& build);

// `weights` (of `shape`) in f32 in the layout `desc` that primitive `prim` takes. With `owner`
// (the tensor `weights` is), made once and kept while the owner lives: entries hold it weakly, so
// a later tensor at the same address never finds a dead one's; without, made for this call.
dnnl::memory prepared_weights(const Tensor<double>& weights, const Shape& shape,
                              const dnnl::memory::desc& desc, const Cached* prim,
                              const std::shared_ptr<const Tensor<double>>& owner);
// Weights prepared and kept so far (tests).
size_t prepared_weights_kept();

// The operators (cpulib/onednn_*.cpp): nullopt where the library refuses the call. `weights`:
// the owner of the weight operand, for prepared_weights.
std::optional<Tensor<double>> conv(const Tensor<double>& x, const Tensor<double>& weight,
                                   const Attrs& attrs,
                                   const std::shared_ptr<const Tensor<double>>& weights = nullptr);
std::optional<Tensor<double>> matmul(
    const Tensor<double>& a, const Tensor<double>& b,
    const std::shared_ptr<const Tensor<double>>& weights = nullptr);

}  // namespace weft::onednn
