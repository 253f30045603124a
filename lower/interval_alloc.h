// Dynamic storage allocation: offsets for buffers with known sizes and live intervals.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace weft {

struct LiveBuffer {
  std::string name;
  int64_t bytes = 0;
  int begin = 0, end = 0;  // inclusive live interval, in schedule levels
  int64_t offset = -1;     // the allocation
};

struct Allocation {
  std::vector<LiveBuffer> buffers;  // same order as the input, offsets filled in
  int64_t peak = 0;                 // bytes
  std::string strategy;             // e.g. "best-fit/by-size"
};

// Tries first, best and worst fit, each over two placement orders (by start time, by size), and
// keeps the allocation with the smallest peak (ties: the first tried). Offsets are multiples of
// `align`.
Allocation allocate_intervals(std::vector<LiveBuffer> buffers, int64_t align);

// Pairs of buffers live at the same time whose byte ranges overlap, as readable lines (empty: the
// allocation is sound). Also reports unassigned offsets and buffers beyond `peak`.
std::vector<std::string> find_overlaps(const std::vector<LiveBuffer>& buffers, int64_t peak);

}  // namespace weft
