// The block searches' memo: for each operand list (and mode and block-graph size), the
// schedules and the block graphs found under each, kept for the whole search and its checkpoints.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "search/block_search.h"
#include "search/signature.h"

namespace weft {

// The block graphs found for one operand list, per schedule (in schedule order), so a resumed
// search can skip the schedules already explored.
struct BlockResults {
  std::mutex mu;  // guards per_schedule/done/states against the checkpoint writer
  std::vector<BlockSchedule> schedules;
  std::vector<std::vector<BlockSketch>> per_schedule;
  std::vector<bool> done;
  std::vector<int64_t> states;
  // Done, but with the memo full (memory budget): the block search stopped early or never ran,
  // so per_schedule holds only some of the block graphs. Never checkpointed: a resumed search
  // redoes these schedules.
  std::vector<bool> truncated;
  // Intermediate mode: the (schedule, sketch) pairs the kernel search expands, at most
  // config.intermediate_variants per output signature, in schedule order (the least estimated
  // traffic first; within a schedule, the fewest saved elements first). It grows schedule by
  // schedule as each is done, so kernel graphs are built above the first schedules' block graphs
  // while later ones are still unsearched; `kept_through` schedules have been taken in,
  // `kept_count` counts the block graphs kept per signature (not checkpointed: both are recomputed
  // from per_schedule).
  std::vector<std::pair<size_t, size_t>> kept;
  size_t kept_through = 0;
  SignatureTable kept_count;
};

// Persistent memo of block searches keyed by the operands' types and terms.
class BlockMemo {
 public:
  // `init` fills a fresh entry (under the memo's lock).
  std::shared_ptr<BlockResults> get_or_create(const std::string& key,
                                              const std::function<void(BlockResults&)>& init);
  // The entry for `key`, or null.
  std::shared_ptr<BlockResults> find(const std::string& key) const;
  std::map<std::string, std::shared_ptr<BlockResults>> snapshot() const;
  void restore(const std::string& key, std::shared_ptr<BlockResults> r);
  // Estimated bytes of everything the memo holds (memory_account.h), e.g. after a restore.
  int64_t bytes() const;
  // Estimated bytes of one entry (its key, its node and `r`, which the caller has locked or owns).
  static int64_t entry_bytes(const std::string& key, const BlockResults& r);
  // Drops every entry: for a caller done with the search that saves no checkpoint, so the
  // memory goes back while the run is still timed (optimize's budget) rather than after it.
  void clear();

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<BlockResults>> map_;
};

}  // namespace weft
