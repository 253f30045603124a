// Finite-field fingerprints (a program's tensors evaluated in one test) and the cache that lets
// many candidates share the fingerprints of common tensors: the inputs, the target's outputs and
// any kernel-level prefix they have in common.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "interp/tensor.h"
#include "ir/graph.h"
#include "verify/field_domain.h"

namespace weft {

// Keyed by (test seed, structural hash of a kernel-level value's cone). Thread-safe. Entries are
// kept until the byte budget is reached; beyond it new tensors are simply not cached.
class FingerprintCache {
 public:
  explicit FingerprintCache(int64_t capacity_bytes = int64_t{1} << 30)
      : capacity_bytes_(capacity_bytes) {}

  template <class V>
  std::shared_ptr<const Tensor<V>> find(uint64_t test_seed, uint64_t hash) const {
    std::lock_guard<std::mutex> lock(mu_);
    const auto& m = table<V>();
    auto it = m.find({test_seed, hash});
    if (it == m.end()) {
      ++misses_;
      return nullptr;
    }
    ++hits_;
    return it->second;
  }
  template <class V>
  void insert(uint64_t test_seed, uint64_t hash, std::shared_ptr<const Tensor<V>> t) {
    std::lock_guard<std::mutex> lock(mu_);
    auto bytes = static_cast<int64_t>(t->data.size() * sizeof(V));
    if (bytes_ + bytes > capacity_bytes_) return;
    if (table<V>().emplace(std::make_pair(test_seed, hash), std::move(t)).second) bytes_ += bytes;
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mu_);
    p_.clear();
    pq_.clear();
    bytes_ = 0;
  }
  int64_t hits() const { return hits_; }
  int64_t misses() const { return misses_; }
  int64_t bytes() const { return bytes_; }

 private:
  template <class V>
  using Table = std::map<std::pair<uint64_t, uint64_t>, std::shared_ptr<const Tensor<V>>>;
  template <class V>
  Table<V>& table() {
    if constexpr (std::is_same_v<V, FieldP>)
      return p_;
    else
      return pq_;
  }
  template <class V>
  const Table<V>& table() const {
    if constexpr (std::is_same_v<V, FieldP>)
      return p_;
    else
      return pq_;
  }

  int64_t capacity_bytes_;
  mutable std::mutex mu_;
  Table<FieldP> p_;
  Table<FieldPQ> pq_;
  int64_t bytes_ = 0;
  mutable int64_t hits_ = 0, misses_ = 0;
};

// The random input tensor `index` of a test: residues drawn from (test seed, index, element),
// uniform in Z_p (and independently in Z_q).
template <class V>
Tensor<V> field_random_input(const Shape& shape, uint64_t test_seed, uint64_t index, int threads);

// Evaluates kernel graph `g` over the field domain of one test, kernel-level op by op, reusing and
// filling `cache` (may be null). Throws ZeroDivisorError / OutsideLaxError from the domain.
template <class V>
std::vector<Tensor<V>> field_fingerprints(const Graph& g, const FieldDomain<V>& domain,
                                          FingerprintCache* cache);

// Whether `g` (nested bodies and composites included) applies exp anywhere.
bool uses_exp(const Graph& g);

}  // namespace weft
