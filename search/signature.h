// What the rest of a kernel graph can see of a block graph: its outputs' types, terms, axis
// classes and partial-result dims. Block graphs with equal signatures are interchangeable in any
// kernel graph; only their cost differs. A compact table finds the block graph with a signature.
#pragma once

#include <cstdint>
#include <vector>

#include "search/block_search.h"
#include "search/memory_account.h"

namespace weft {

using Signature = std::vector<int64_t>;

Signature signature_of(const BlockSketch& sk);
uint64_t signature_hash(const BlockSketch& sk);
bool same_signature(const BlockSketch& a, const BlockSketch& b);

// Open addressing over signature hashes: each entry is a hash, a reference to a block graph that
// has the signature (resolved by the caller's `at(ref)`) and a value. Signatures are compared in
// full only when hashes match, so entries hold no signature: 24 bytes each in one array, where a
// std::map<Signature, ...> takes a tree node and a vector per entry (~10x the memory, left behind
// as heap fragments once freed).
class SignatureTable {
 public:
  struct Entry {
    uint64_t hash = 0;
    uint64_t ref = kEmpty;
    int64_t value = 0;
  };

  // The entry for `sk`'s signature (whose hash is `hash`), or null.
  template <class At>
  Entry* find(const BlockSketch& sk, uint64_t hash, At&& at) {
    if (slots_.empty()) return nullptr;
    size_t mask = slots_.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      Entry& e = slots_[i];
      if (e.ref == kEmpty) return nullptr;
      if (e.hash == hash && same_signature(sk, at(e.ref))) return &e;
    }
  }
  // Adds an entry for a signature `find` did not find.
  Entry& insert(uint64_t hash, uint64_t ref, int64_t value);

  size_t size() const { return used_; }
  int64_t bytes() const { return heap_bytes(slots_); }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  std::vector<Entry> slots_;  // a power of two, at most 3/4 used
  size_t used_ = 0;
};

}  // namespace weft
