// The block searches' memo (block_memo.h).
#include "search/block_memo.h"

#include "search/memory_account.h"

namespace weft {

std::shared_ptr<BlockResults> BlockMemo::get_or_create(
    const std::string& key, const std::function<void(BlockResults&)>& init) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map_.find(key);
  if (it != map_.end()) return it->second;
  auto r = std::make_shared<BlockResults>();
  init(*r);
  map_.emplace(key, r);
  return r;
}

std::shared_ptr<BlockResults> BlockMemo::find(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map_.find(key);
  return it == map_.end() ? nullptr : it->second;
}

std::map<std::string, std::shared_ptr<BlockResults>> BlockMemo::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return map_;
}

void BlockMemo::restore(const std::string& key, std::shared_ptr<BlockResults> r) {
  std::lock_guard<std::mutex> lock(mu_);
  map_[key] = std::move(r);
}

int64_t BlockMemo::entry_bytes(const std::string& key, const BlockResults& r) {
  using Node = std::pair<const std::string, std::shared_ptr<BlockResults>>;
  auto bits = [](const std::vector<bool>& v) {
    return heap_chunk(static_cast<int64_t>(v.capacity() / 8));
  };
  // The map node, its copy of the key (as long as the key: not the capacity of the string it was
  // built in), and make_shared's one allocation (control block + results).
  int64_t key_bytes = key.size() > 15 ? heap_chunk(static_cast<int64_t>(key.size() + 1)) : 0;
  int64_t n = map_node_bytes(sizeof(Node)) + key_bytes + heap_chunk(16 + sizeof(BlockResults));
  n += heap_bytes(r.schedules) + heap_bytes(r.per_schedule) + bits(r.done) + bits(r.truncated) +
       heap_bytes(r.states) + heap_bytes(r.kept) + r.kept_count.bytes();
  for (const BlockSchedule& s : r.schedules) n += heap_bytes(s);
  for (const std::vector<BlockSketch>& sketches : r.per_schedule) {
    n += heap_bytes(sketches);
    for (const BlockSketch& sk : sketches) n += heap_bytes(sk);
  }
  return n;
}

void BlockMemo::clear() {
  std::map<std::string, std::shared_ptr<BlockResults>> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    dropped.swap(map_);
  }
}

int64_t BlockMemo::bytes() const {
  int64_t n = 0;
  for (const auto& [key, results] : snapshot()) {
    std::lock_guard<std::mutex> lock(results->mu);
    n += entry_bytes(key, *results);
  }
  return n;
}

}  // namespace weft
