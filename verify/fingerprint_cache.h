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

#include "core/tensor.h"
#include "ir/graph.h"
#include "verify/field_domain.h"

namespace weft {

// Keyed by (test seed, structural hash of a kernel-level value's cone). Thread-safe. Entries are
// kept until the byte budget is reached; beyond it new tensors are not cached, except the ones
// inserted with `keep` (a test's inputs and the target's outputs: every later candidate reads
// them, whereas an intermediate is read only by a candidate sharing that prefix), which evict
// intermediates to make room. Without that, a large target's intermediates of the first few
// tests fill the budget and the target is evaluated again for every later test of every
// candidate.
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
    return it->second.tensor;
  }
  template <class V>
  void insert(uint64_t test_seed, uint64_t hash, std::shared_ptr<const Tensor<V>> t,
              bool keep = false) {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t bytes = bytes_of(*t);
    if (bytes_ + bytes > capacity_bytes_ && keep) {
      evict_intermediates(p_, bytes);
      evict_intermediates(pq_, bytes);
    }
    if (bytes_ + bytes > capacity_bytes_) return;
    auto [it, inserted] =
        table<V>().emplace(std::make_pair(test_seed, hash), Entry<V>{std::move(t), keep});
    if (inserted)
      bytes_ += bytes;
    else
      it->second.keep = it->second.keep || keep;
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
  struct Entry {
    std::shared_ptr<const Tensor<V>> tensor;
    bool keep = false;
  };
  template <class V>
  using Table = std::map<std::pair<uint64_t, uint64_t>, Entry<V>>;

  template <class V>
  static int64_t bytes_of(const Tensor<V>& t) {
    return static_cast<int64_t>(t.data.size() * sizeof(V));
  }
  // Drops entries not marked `keep` until `needed` more bytes fit (or none is left).
  template <class V>
  void evict_intermediates(Table<V>& m, int64_t needed) {
    for (auto it = m.begin(); it != m.end() && bytes_ + needed > capacity_bytes_;) {
      if (it->second.keep) {
        ++it;
        continue;
      }
      bytes_ -= bytes_of(*it->second.tensor);
      it = m.erase(it);
    }
  }
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
// filling `cache` (may be null); the inputs, and the outputs when `keep_outputs` (the target's,
// which every candidate is compared with), are cached with `keep`. Throws ZeroDivisorError /
// OutsideLaxError / EvaluationAbandoned from the domain (before each op too:
// FieldDomain::check_give_up; the cache only ever gains whole results, so it stays valid).
template <class V>
std::vector<Tensor<V>> field_fingerprints(const Graph& g, const FieldDomain<V>& domain,
                                          FingerprintCache* cache, bool keep_outputs = false);

// Whether `g` (nested bodies and composites included) applies exp anywhere.
bool uses_exp(const Graph& g);

}  // namespace weft
