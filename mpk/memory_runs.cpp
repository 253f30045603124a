// Byte runs of boxes: the odometer walks every index of the box but its contiguous dim.
#include "mpk/memory_runs.h"

#include <algorithm>

#include "core/error.h"
#include "lower/plan.h"

namespace weft {

int64_t storage_of(const TgTensor& t) {
  switch (t.home) {
    case TensorHome::input:
      return 1 + 2 * t.slot;
    case TensorHome::output:
      return 2 + 2 * t.slot;
    case TensorHome::workspace:
      return 0;
  }
  return -1;
}

namespace {

int64_t base_of(const TgTensor& t) {
  return t.home == TensorHome::workspace ? t.slot : 0;
}

}  // namespace

std::pair<int64_t, int64_t> byte_span(const TgTensor& t, const Box& box) {
  const auto strides = layout_strides(t.shape, t.contiguous_dim);
  const int64_t eb = dtype_bytes(t.dtype);
  int64_t lo = 0, hi = 0;
  for (size_t d = 0; d < strides.size(); ++d) {
    lo += box.lo[d] * strides[d];
    hi += (box.hi[d] - 1) * strides[d];
  }
  return {base_of(t) + lo * eb, base_of(t) + (hi + 1) * eb};
}

std::optional<std::vector<std::pair<int64_t, int64_t>>> byte_runs(const TgTensor& t, const Box& box,
                                                                  int64_t max_runs) {
  std::vector<std::pair<int64_t, int64_t>> runs;
  if (box.empty()) return runs;
  const auto strides = layout_strides(t.shape, t.contiguous_dim);
  const int64_t eb = dtype_bytes(t.dtype);
  const size_t rank = strides.size(), c = static_cast<size_t>(t.contiguous_dim);
  int64_t count = 1;
  for (size_t d = 0; d < rank; ++d)
    if (d != c) count *= box.hi[d] - box.lo[d];
  if (count > max_runs) return std::nullopt;
  std::vector<int64_t> idx(box.lo);
  for (int64_t r = 0; r < count; ++r) {
    int64_t off = 0;
    for (size_t d = 0; d < rank; ++d) off += (d == c ? box.lo[d] : idx[d]) * strides[d];
    int64_t len = rank == 0 ? 1 : box.hi[c] - box.lo[c];
    runs.emplace_back(base_of(t) + off * eb, base_of(t) + (off + len) * eb);
    for (size_t d = rank; d-- > 0;) {  // odometer over the non-contiguous dims
      if (d == c) continue;
      if (++idx[d] < box.hi[d]) break;
      idx[d] = box.lo[d];
    }
  }
  std::sort(runs.begin(), runs.end());
  std::vector<std::pair<int64_t, int64_t>> merged;
  for (const auto& r : runs) {
    if (!merged.empty() && r.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, r.second);
    else
      merged.push_back(r);
  }
  return merged;
}

bool runs_intersect(const std::vector<std::pair<int64_t, int64_t>>& a,
                    const std::vector<std::pair<int64_t, int64_t>>& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::max(a[i].first, b[j].first) < std::min(a[i].second, b[j].second)) return true;
    if (a[i].second < b[j].second)
      ++i;
    else
      ++j;
  }
  return false;
}

}  // namespace weft
