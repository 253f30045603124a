// The pruning oracle: saturated e-graph of the target, reachability, cached bottom-up lookups.
#include "absexpr/oracle.h"

#include "absexpr/axioms.h"
#include "core/error.h"

namespace weft {

const char* prune_verdict_name(PruneVerdict v) {
  switch (v) {
    case PruneVerdict::not_viable:
      return "not viable";
    case PruneVerdict::viable:
      return "viable";
    case PruneVerdict::equivalent:
      return "equivalent";
  }
  return "?";
}

Oracle::Oracle(TermStore& store, TermId target, const SaturationLimits& limits)
    : store_(store), target_(target), cache_(new std::atomic<std::atomic<uint32_t>*>[kMaxChunks]) {
  for (size_t i = 0; i < kMaxChunks; ++i) cache_[i].store(nullptr, std::memory_order_relaxed);
  bool truncated = false;
  std::vector<Axiom> axioms = axioms_for(store, target, &truncated);
  root_ = graph_.add_term(store, target);
  if (truncated) {
    // The rules would be incomplete, so nothing may be pruned: saturating would be wasted work.
    graph_.rebuild();
    stats_.stop = SaturationStop::size_limit;
    stats_.nodes = graph_.num_nodes();
    stats_.classes = graph_.num_classes();
  } else {
    stats_ = graph_.saturate(compile_axioms(axioms), limits);
  }
  root_ = graph_.find(root_);
  // Classes reachable from the root through operands: the A_sub closure of the target's class.
  reachable_.assign(graph_.class_capacity(), 0);
  std::vector<ClassId> stack = {root_};
  reachable_[root_] = 1;
  while (!stack.empty()) {
    ClassId c = stack.back();
    stack.pop_back();
    ++num_reachable_;
    for (const ENode& n : graph_.nodes(c)) {
      for (ClassId child : {n.a, n.b}) {
        if (child == kNoClass) continue;
        child = graph_.find(child);
        if (!reachable_[child]) {
          reachable_[child] = 1;
          stack.push_back(child);
        }
      }
    }
  }
}

Oracle::~Oracle() {
  for (size_t i = 0; i < kMaxChunks; ++i) delete[] cache_[i].load(std::memory_order_relaxed);
}

std::atomic<uint32_t>* Oracle::cache_slot(TermId t) const {
  size_t chunk = t >> kChunkBits;
  WEFT_CHECK(chunk < kMaxChunks, "term id {} beyond the oracle cache", t);
  std::atomic<uint32_t>* block = cache_[chunk].load(std::memory_order_acquire);
  if (block == nullptr) {
    std::lock_guard lock(cache_mu_);
    block = cache_[chunk].load(std::memory_order_acquire);
    if (block == nullptr) {
      block = new std::atomic<uint32_t>[kChunkSize];
      for (size_t i = 0; i < kChunkSize; ++i) block[i].store(0, std::memory_order_relaxed);
      cache_[chunk].store(block, std::memory_order_release);
    }
  }
  return &block[t & (kChunkSize - 1)];
}

ClassId Oracle::class_of(TermId t) const {
  std::atomic<uint32_t>* slot = cache_slot(t);
  uint32_t cached = slot->load(std::memory_order_relaxed);
  if (cached != 0) return cached - 1 == 0 ? kNoClass : cached - 2;
  const TermNode& n = store_.node(t);
  ENode e{n.op, n.k, kNoClass, kNoClass};
  ClassId result = kNoClass;
  bool operands_found = true;
  if (n.a != kNoTerm) {
    e.a = class_of(n.a);
    operands_found &= e.a != kNoClass;
  }
  if (n.b != kNoTerm) {
    e.b = class_of(n.b);
    operands_found &= e.b != kNoClass;
  }
  if (operands_found) {
    if (auto c = graph_.lookup(e)) result = *c;
  }
  // Racing threads compute the same value, so a plain store is enough.
  slot->store(result == kNoClass ? 1 : result + 2, std::memory_order_relaxed);
  return result;
}

PruneVerdict Oracle::classify(TermId t) const {
  ClassId c = class_of(t);
  if (c == root_) return PruneVerdict::equivalent;
  bool viable = c != kNoClass && reachable_[c];
  if (!complete()) return PruneVerdict::equivalent;
  return viable ? PruneVerdict::viable : PruneVerdict::not_viable;
}

}  // namespace weft
