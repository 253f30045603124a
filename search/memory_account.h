// The memory the search holds in the structures that grow with it (the memo of block graphs, the
// candidates, abstract-expression terms), estimated from each stored object's sizes and counted
// against `memory_budget_mb`: cheap and deterministic, unlike reading the resident size.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "search/block_search.h"
#include "search/stats.h"

namespace weft {

// Bytes glibc's malloc takes for a request of `n` bytes: an 8-byte header, 16-byte rounding and
// a 32-byte minimum chunk. Other allocators differ a little; the budget leaves room for that.
constexpr int64_t heap_chunk(int64_t n) {
  return n <= 0 ? 0 : std::max<int64_t>(32, (n + 8 + 15) / 16 * 16);
}
template <class T>
int64_t heap_bytes(const std::vector<T>& v) {
  return heap_chunk(static_cast<int64_t>(v.capacity() * sizeof(T)));
}
int64_t heap_bytes(const std::string& s);  // 0 while the short-string buffer holds it

// Heap memory owned by an object, beyond its sizeof (which its container counts).
int64_t heap_bytes(const BlockSchedule& s);
int64_t heap_bytes(const BlockSketch& sk);
int64_t heap_bytes(const Graph& g);

// A node of a std::map / std::set holding `value_bytes` (the tree's 32-byte node header added).
constexpr int64_t map_node_bytes(int64_t value_bytes) {
  return heap_chunk(32 + value_bytes);
}

// The shared account. Exceeding the budget stops the search (StopReason::memory_budget); before
// that, at `kMemoShare` of it, the memo stops taking new intermediate-mode block graphs so the
// search goes on in the memory it has (kernel_search.cpp).
class MemoryAccount {
 public:
  static constexpr double kMemoShare = 0.8;

  // `budget_bytes` 0: unlimited (still counted, for the progress line and the summary).
  MemoryAccount(int64_t budget_bytes, StopSignal& stop)
      : budget_(budget_bytes),
        memo_limit_(static_cast<int64_t>(static_cast<double>(budget_bytes) * kMemoShare)),
        stop_(stop) {}

  // `bytes` more (or fewer, when negative) are held.
  void add(int64_t bytes) {
    int64_t now = held_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    int64_t peak = peak_.load(std::memory_order_relaxed);
    while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
    if (budget_ > 0 && now > budget_) stop_.stop(StopReason::memory_budget);
  }

  int64_t budget() const { return budget_; }
  int64_t held() const { return held_.load(std::memory_order_relaxed); }
  // Peak of held(), including memory workers held only while searching one schedule.
  int64_t peak() const { return peak_.load(std::memory_order_relaxed); }
  bool memo_full() const { return budget_ > 0 && held() >= memo_limit_; }

  // Records held() at a point where no worker holds unpublished memory (between batches of block
  // searches, on the kernel search's thread), so the peak of these samples is the same every run
  // that does not hit a budget: the figure summary.json reports.
  void sample() {
    int64_t now = held();
    if (now > sampled_peak_.load(std::memory_order_relaxed))
      sampled_peak_.store(now, std::memory_order_relaxed);
  }
  int64_t sampled_peak() const { return sampled_peak_.load(std::memory_order_relaxed); }

  // One worker's share: what it holds while it searches (the block graphs found so far and the
  // dominance map), published to the shared account in steps of at least kStep bytes so the
  // workers do not contend on it for every block graph. Whatever is not committed is given back
  // when the share is destroyed (the worker's structures are freed with it).
  class Share {
   public:
    static constexpr int64_t kStep = int64_t{1} << 20;
    explicit Share(MemoryAccount& account) : account_(account) {}
    Share(const Share&) = delete;
    Share& operator=(const Share&) = delete;
    ~Share() { account_.add(-published_); }

    // The worker now holds `bytes`.
    void set(int64_t bytes) {
      bytes_ = bytes;
      if (bytes_ - published_ >= kStep || published_ - bytes_ >= kStep) publish();
    }
    void publish() {
      account_.add(bytes_ - published_);
      published_ = bytes_;
    }
    // The worker's `bytes` now belong to a longer-lived structure (the memo), which keeps them
    // counted; the share holds nothing any more.
    void commit(int64_t bytes) {
      set(bytes);
      publish();
      bytes_ = published_ = 0;
    }
    int64_t bytes() const { return bytes_; }

   private:
    MemoryAccount& account_;
    int64_t bytes_ = 0, published_ = 0;
  };

 private:
  const int64_t budget_;
  const int64_t memo_limit_;
  StopSignal& stop_;
  std::atomic<int64_t> held_{0};
  std::atomic<int64_t> peak_{0};
  std::atomic<int64_t> sampled_peak_{0};
};

}  // namespace weft
