// The bytes a box of a tensor covers, as sorted runs of its storage (an input or output buffer,
// or the shared workspace): exact overlap of accesses to tensors that share workspace bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "mpk/task_graph.h"

namespace weft {

// Storage a tensor lives in: inputs and outputs have a buffer each, temps share the workspace.
// Two tensors can overlap only when their storages are equal.
int64_t storage_of(const TgTensor& t);

// Half-open byte runs [begin, end) of `box` in the tensor's storage, sorted and merged; nullopt
// when there would be more than `max_runs` (the caller then falls back to byte_span).
std::optional<std::vector<std::pair<int64_t, int64_t>>> byte_runs(const TgTensor& t, const Box& box,
                                                                  int64_t max_runs);
// The smallest byte range holding the box.
std::pair<int64_t, int64_t> byte_span(const TgTensor& t, const Box& box);

bool runs_intersect(const std::vector<std::pair<int64_t, int64_t>>& a,
                    const std::vector<std::pair<int64_t, int64_t>>& b);

}  // namespace weft
