// Block-graph output signatures: one word sequence, built as a vector, hashed, or compared.
#include "search/signature.h"

namespace weft {
namespace {

// Calls `word` with each word of the signature, in order.
template <class F>
void signature_words(const BlockSketch& sk, F&& word) {
  for (size_t i = 0; i < sk.output_types.size(); ++i) {
    const TensorType& t = sk.output_types[i];
    word(static_cast<int64_t>(t.dtype));
    word(static_cast<int64_t>(t.shape.size()));
    for (int64_t d : t.shape) word(d);
    word(static_cast<int64_t>(sk.output_terms[i]));  // hash-consed: equal terms have equal ids
    for (int8_t c : sk.output_classes[i]) word(c);
    if (i < sk.output_parts.size()) {
      for (int64_t p : sk.output_parts[i]) word(p);
      for (int8_t c : sk.output_part_classes[i]) word(c);
    }
  }
}

}  // namespace

Signature signature_of(const BlockSketch& sk) {
  Signature key;
  key.reserve(sk.output_types.size() * 20);
  signature_words(sk, [&](int64_t w) { key.push_back(w); });
  return key;
}

uint64_t signature_hash(const BlockSketch& sk) {
  uint64_t h = 0x9e3779b97f4a7c15ULL;
  signature_words(sk, [&](int64_t w) {
    h ^= static_cast<uint64_t>(w) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  });
  // splitmix64's finalizer: the table indexes by the low bits.
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

bool same_signature(const BlockSketch& a, const BlockSketch& b) {
  // Reused per thread: comparisons are frequent (every dominated block graph) and short.
  thread_local Signature x, y;
  x.clear();
  y.clear();
  signature_words(a, [&](int64_t w) { x.push_back(w); });
  signature_words(b, [&](int64_t w) { y.push_back(w); });
  return x == y;
}

SignatureTable::Entry& SignatureTable::insert(uint64_t hash, uint64_t ref, int64_t value) {
  if ((used_ + 1) * 4 > slots_.size() * 3) {
    std::vector<Entry> old = std::move(slots_);
    slots_.assign(std::max<size_t>(16, old.size() * 2), Entry{});
    size_t mask = slots_.size() - 1;
    for (const Entry& e : old) {
      if (e.ref == kEmpty) continue;
      size_t i = e.hash & mask;
      while (slots_[i].ref != kEmpty) i = (i + 1) & mask;
      slots_[i] = e;
    }
  }
  size_t mask = slots_.size() - 1;
  size_t i = hash & mask;
  while (slots_[i].ref != kEmpty) i = (i + 1) & mask;
  slots_[i] = Entry{hash, ref, value};
  ++used_;
  return slots_[i];
}

}  // namespace weft
