// The disk cache of superoptimized regions: one JSON file per region, named by a hash of what
// decides the result (the region's canonical µGraph text, the target, the shape binding and the
// search configuration without its budgets), written atomically; an entry that cannot be read is
// ignored with a warning and written again.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "search/config.h"
#include "sym/evaluate.h"

namespace weft {

struct CachedRegion {
  Graph graph;         // the verified best µGraph of the region
  std::string origin;  // as RankedCandidate::origin, or "input" (nothing better verified)
  std::string stop;    // why its search stopped
  double search_s = 0;
};

class RegionCache {
 public:
  explicit RegionCache(std::string dir) : dir_(std::move(dir)) {}
  bool enabled() const { return !dir_.empty(); }

  // The full key text: its hash names the entry, and the entry holds it to rule out collisions.
  // Budgets (time, states, memory), threads and checkpointing do not take part: they change
  // how long a search runs, and every result is verified against the region whatever the budget.
  static std::string key(const std::string& region_text, const std::string& target,
                         const SymBinding& binding, const SearchConfig& config);
  std::string path(const std::string& key) const;  // DIR/HASH.json

  // The entry for `key`; nullopt when there is none, or when it cannot be read (a warning is
  // appended to `warnings`).
  std::optional<CachedRegion> load(const std::string& key,
                                   std::vector<std::string>& warnings) const;
  // Writes the entry (a temporary file renamed over it). Throws UserError when it cannot.
  void store(const std::string& key, const CachedRegion& entry) const;

 private:
  std::string dir_;
};

}  // namespace weft
