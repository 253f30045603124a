// Enumeration of kernel graphs: pre-defined operators and graph-defined kernels (whose block
// graphs come from block_search) over the program's inputs, emitting every complete µGraph whose
// outputs are equivalent, by abstract expression, to the input program's.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "core/target.h"
#include "ir/graph.h"
#include "search/block_search.h"
#include "search/config.h"
#include "search/dim_classes.h"
#include "search/expr_oracle.h"
#include "search/memory_account.h"
#include "search/stats.h"

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
  // config.intermediate_variants per output signature, in schedule order; built once every
  // schedule is done (not checkpointed: it is recomputed from per_schedule).
  std::vector<std::pair<size_t, size_t>> kept;
  bool kept_ready = false;
};

// Persistent memo of block searches keyed by the operands' types and terms.
class BlockMemo {
 public:
  // `init` fills a fresh entry (under the memo's lock).
  std::shared_ptr<BlockResults> get_or_create(const std::string& key,
                                              const std::function<void(BlockResults&)>& init);
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

struct KernelSearchContext {
  const Graph& program;  // composites expanded
  const SearchConfig& config;
  const Target& target;
  const SearchConstants& constants;
  const DimClasses& classes;
  ExprOracle& oracle;
  SearchStats& stats;
  StopSignal& stop;
  BlockMemo& memo;
  int threads = 1;
  MemoryAccount* memory = nullptr;  // null: nothing counted, no memory budget
};

// Runs the search and calls `emit` with each candidate µGraph (deterministic order).
void search_kernel_graphs(const KernelSearchContext& ctx, const std::function<void(Graph&&)>& emit);

// The scale factors and shift offsets of a program (after composite expansion).
SearchConstants constants_of(const Graph& program);

}  // namespace weft
