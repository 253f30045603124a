// First / best / worst fit over live intervals, and the overlap checker.
#include "lower/interval_alloc.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <numeric>

namespace weft {

namespace {

enum class Fit { first, best, worst };

bool live_together(const LiveBuffer& a, const LiveBuffer& b) {
  return a.begin <= b.end && b.begin <= a.end;
}

int64_t round_up(int64_t x, int64_t a) {
  return (x + a - 1) / a * a;
}

int64_t place(const std::vector<LiveBuffer>& bufs, const std::vector<size_t>& placed,
              const LiveBuffer& item, int64_t align, Fit fit) {
  // Busy ranges of already-placed buffers live at the same time, sorted by offset.
  std::vector<std::pair<int64_t, int64_t>> busy;
  for (size_t i : placed)
    if (live_together(bufs[i], item))
      busy.emplace_back(bufs[i].offset, bufs[i].offset + round_up(bufs[i].bytes, align));
  std::sort(busy.begin(), busy.end());
  int64_t size = round_up(item.bytes, align);
  int64_t best_off = -1, best_gap = 0;
  int64_t cursor = 0;
  auto consider = [&](int64_t gap_start, int64_t gap_end) {
    int64_t gap = gap_end - gap_start;
    if (gap < size) return;
    bool take = best_off < 0 || (fit == Fit::best && gap < best_gap) ||
                (fit == Fit::worst && gap > best_gap);
    if (take) best_off = gap_start, best_gap = gap;
  };
  for (auto [lo, hi] : busy) {
    if (lo > cursor) consider(cursor, lo);
    cursor = std::max(cursor, hi);
    if (fit == Fit::first && best_off >= 0) return best_off;
  }
  if (best_off >= 0) return best_off;
  return cursor;  // on top of everything live: no finite gap fits
}

}  // namespace

Allocation allocate_intervals(std::vector<LiveBuffer> buffers, int64_t align) {
  Allocation best;
  best.peak = std::numeric_limits<int64_t>::max();
  const char* fit_names[] = {"first-fit", "best-fit", "worst-fit"};
  for (int order = 0; order < 2; ++order) {
    std::vector<size_t> idx(buffers.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
      if (order == 0) return buffers[a].begin < buffers[b].begin;
      return buffers[a].bytes > buffers[b].bytes;
    });
    for (int f = 0; f < 3; ++f) {
      std::vector<LiveBuffer> bufs = buffers;
      std::vector<size_t> placed;
      int64_t peak = 0;
      for (size_t i : idx) {
        bufs[i].offset = place(bufs, placed, bufs[i], align, static_cast<Fit>(f));
        peak = std::max(peak, bufs[i].offset + round_up(bufs[i].bytes, align));
        placed.push_back(i);
      }
      if (peak < best.peak) {
        best.buffers = std::move(bufs);
        best.peak = peak;
        best.strategy = fmt::format("{}/{}", fit_names[f], order == 0 ? "by-start" : "by-size");
      }
    }
  }
  if (buffers.empty()) best.peak = 0, best.strategy = "empty";
  return best;
}

std::vector<std::string> find_overlaps(const std::vector<LiveBuffer>& b, int64_t peak) {
  std::vector<std::string> errors;
  for (size_t i = 0; i < b.size(); ++i) {
    if (b[i].offset < 0)
      errors.push_back(fmt::format("{} has no offset", b[i].name));
    else if (b[i].offset + b[i].bytes > peak)
      errors.push_back(fmt::format("{} ends at {} beyond the peak {}", b[i].name,
                                   b[i].offset + b[i].bytes, peak));
    for (size_t j = i + 1; j < b.size(); ++j) {
      if (!live_together(b[i], b[j])) continue;
      bool disjoint =
          b[i].offset + b[i].bytes <= b[j].offset || b[j].offset + b[j].bytes <= b[i].offset;
      if (!disjoint)
        errors.push_back(fmt::format(
            "{} [{}, {}) and {} [{}, {}) overlap while both live (levels {}..{} and {}..{})",
            b[i].name, b[i].offset, b[i].offset + b[i].bytes, b[j].name, b[j].offset,
            b[j].offset + b[j].bytes, b[i].begin, b[i].end, b[j].begin, b[j].end));
    }
  }
  return errors;
}

}  // namespace weft
