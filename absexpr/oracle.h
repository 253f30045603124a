// The pruning oracle: is a prefix's abstract expression a subexpression of something A_eq-equal
// to the target's, and is a complete candidate's expression equal to it?
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absexpr/egraph.h"
#include "absexpr/term.h"

namespace weft {

enum class PruneVerdict : uint8_t { not_viable, viable, equivalent };
const char* prune_verdict_name(PruneVerdict v);

// Built once per search: saturates an e-graph of the target under A_eq (plus the factorization
// rules for the target's sizes) and marks every e-class reachable from the target's class through
// operands, which is exactly the set of A_sub-subexpressions of terms equivalent to the target.
// A query looks the term up bottom-up in the saturated graph; answers are cached per term id.
//
// Soundness (Theorem 1): when saturation stops early (a limit), the graph may miss equivalent
// forms, so the oracle then never says "not viable" and says "equivalent" for every viable term
// (the finite-field verifier decides); `complete()` tells the search which case it is in.
//
// Thread-safe: any number of threads may query (and create terms in the store) concurrently; the
// answer for a term never depends on timing.
class Oracle {
 public:
  Oracle(TermStore& store, TermId target, const SaturationLimits& limits = {});
  ~Oracle();
  Oracle(const Oracle&) = delete;
  Oracle& operator=(const Oracle&) = delete;

  PruneVerdict classify(TermId t) const;
  // Is `t` a subexpression of some term A_eq-equivalent to the target?
  bool is_viable(TermId t) const { return classify(t) != PruneVerdict::not_viable; }
  // Is `t` A_eq-equivalent to the target?
  bool is_equivalent(TermId t) const { return classify(t) == PruneVerdict::equivalent; }
  // Is `t` in the target's class of the graph as saturated? The same as is_equivalent when
  // complete(); otherwise the equivalences found before the limit, a subset of is_equivalent's.
  bool is_proven_equivalent(TermId t) const { return class_of(t) == root_; }

  TermId target() const { return target_; }
  bool complete() const { return stats_.stop == SaturationStop::saturated; }
  const SaturationStats& stats() const { return stats_; }
  size_t viable_classes() const { return num_reachable_; }
  const TermStore& store() const { return store_; }

 private:
  // Class of `t` in the saturated graph, or kNoClass when not represented; cached.
  ClassId class_of(TermId t) const;

  const TermStore& store_;
  TermId target_;
  EGraph graph_;
  SaturationStats stats_;
  ClassId root_ = kNoClass;
  std::vector<uint8_t> reachable_;
  size_t num_reachable_ = 0;

  // Per-term cache: class + 1 (0 = not computed, 1 = not represented), in lazily allocated chunks
  // that never move, so cached reads take no lock.
  static constexpr int kChunkBits = 14;
  static constexpr size_t kChunkSize = size_t{1} << kChunkBits;
  static constexpr size_t kMaxChunks = size_t{1} << 14;
  std::unique_ptr<std::atomic<std::atomic<uint32_t>*>[]> cache_;
  mutable std::mutex cache_mu_;
  std::atomic<uint32_t>* cache_slot(TermId t) const;
};

}  // namespace weft
