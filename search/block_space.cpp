// Enumeration of block schedules from operand shapes.
#include "search/block_space.h"

#include <algorithm>
#include <set>

namespace weft {

TensorType iter_tile_type(const TensorType& operand, const IterChoice& c, const BlockSchedule& s) {
  TensorType t = operand;
  for (int g = 0; g < 3; ++g)
    if (c.imap[g] >= 0) t.shape[c.imap[g]] /= s.grid[g];
  if (c.fmap >= 0) t.shape[c.fmap] /= s.loop;
  return t;
}

namespace {

std::vector<int64_t> divisors(int64_t n, int64_t lo, int64_t hi) {
  std::vector<int64_t> d;
  for (int64_t i = std::max<int64_t>(lo, 1); i <= std::min(n, hi); ++i)
    if (n % i == 0) d.push_back(i);
  return d;
}

struct Enumerator {
  const std::vector<TensorType>& operands;
  const SearchConfig& config;
  const Target& target;
  const ScheduleRules& rules;
  std::vector<BlockSchedule> out;

  bool grid_axes_ok(const std::array<int64_t, 3>& grid,
                    const std::vector<std::array<int8_t, 3>>& imaps) {
    if (!rules.classes) return true;
    std::array<int8_t, 3> cls = {kAnyClass, kAnyClass, kAnyClass};
    for (int g = 0; g < 3; ++g) {
      if (grid[g] == 1) continue;
      for (size_t i = 0; i < imaps.size(); ++i) {
        if (imaps[i][g] < 0) continue;
        int8_t c = rules.operand_classes[i][imaps[i][g]];
        if (c == kAnyClass) continue;
        if (cls[g] == kAnyClass) cls[g] = c;
        if (cls[g] != c) return false;  // one grid dim cutting two different axes
      }
      if (cls[g] == kAnyClass) continue;
      for (int h = 0; h < g; ++h)
        if (cls[h] == cls[g]) return false;
      if (rules.final_mode) {
        // A reduced axis may be cut only when some operand carrying it is loaded whole along it
        // in every block (replicated along g): the reduction then reads all of it in each block,
        // as a global statistic applied to a tile does. Otherwise each block would hold partial
        // results, which are not outputs.
        if (rules.classes->reduced[cls[g]] && !replicated_along(g, cls[g], imaps)) return false;
        bool in_output = false;
        for (const DimClassList& o : rules.classes->output_dims)
          for (int8_t c : o) in_output |= c == cls[g];
        if (!in_output) return false;
      }
    }
    return true;
  }

  bool replicated_along(int g, int8_t cls, const std::vector<std::array<int8_t, 3>>& imaps) const {
    for (size_t i = 0; i < imaps.size(); ++i) {
      if (imaps[i][g] >= 0) continue;
      for (int8_t c : rules.operand_classes[i])
        if (c == cls) return true;
    }
    return false;
  }

  bool fmap_ok(size_t operand, int dim) const {
    if (!rules.classes || !rules.sum_accumulators_only) return true;
    return rules.classes->is_reduced(rules.operand_classes[operand][dim]);
  }

  // All imap choices for operand `i` given the grid: per used grid dim, '-' or a distinct data
  // dim that the grid size divides.
  void imaps_for(const TensorType& t, const std::array<int64_t, 3>& grid, int g,
                 std::array<int8_t, 3>& cur, std::vector<std::array<int8_t, 3>>& acc) {
    if (g == 3) {
      acc.push_back(cur);
      return;
    }
    cur[g] = -1;
    imaps_for(t, grid, g + 1, cur, acc);
    if (grid[g] == 1) return;
    for (int d = 0; d < static_cast<int>(t.shape.size()); ++d) {
      bool used = false;
      for (int h = 0; h < g; ++h) used |= cur[h] == d;
      if (used || t.shape[d] % grid[g] != 0) continue;
      cur[g] = static_cast<int8_t>(d);
      imaps_for(t, grid, g + 1, cur, acc);
      cur[g] = -1;
    }
  }

  void with_grid(const std::array<int64_t, 3>& grid) {
    std::vector<std::vector<std::array<int8_t, 3>>> options(operands.size());
    for (size_t i = 0; i < operands.size(); ++i) {
      std::array<int8_t, 3> cur = {-1, -1, -1};
      imaps_for(operands[i], grid, 0, cur, options[i]);
    }
    std::vector<std::array<int8_t, 3>> chosen(operands.size());
    choose_imaps(grid, options, chosen, 0);
  }

  void choose_imaps(const std::array<int64_t, 3>& grid,
                    const std::vector<std::vector<std::array<int8_t, 3>>>& options,
                    std::vector<std::array<int8_t, 3>>& chosen, size_t i) {
    if (i == operands.size()) {
      for (int g = 0; g < 3; ++g) {
        if (grid[g] == 1) continue;
        bool cut = false;
        for (const auto& m : chosen) cut |= m[g] >= 0;
        if (!cut) return;
      }
      if (!grid_axes_ok(grid, chosen)) return;
      with_imaps(grid, chosen);
      return;
    }
    for (const auto& m : options[i]) {
      chosen[i] = m;
      choose_imaps(grid, options, chosen, i + 1);
    }
  }

  void with_imaps(const std::array<int64_t, 3>& grid,
                  const std::vector<std::array<int8_t, 3>>& imaps) {
    BlockSchedule s;
    s.grid = grid;
    s.iters.resize(operands.size());
    std::vector<TensorType> tiles(operands.size());
    for (size_t i = 0; i < operands.size(); ++i) {
      s.iters[i].imap = imaps[i];
      tiles[i] = iter_tile_type(operands[i], s.iters[i], s);
    }
    // loop == 1: everything after the (empty) loop.
    s.loop = 1;
    for (auto& c : s.iters) {
      c.fmap = -1;
      c.post = true;
    }
    emit(s);
    // loop > 1: every divisor of some per-block dim, each operand '-' (loop or post stage) or a
    // dim the loop range divides.
    std::set<int64_t> loops;
    for (const TensorType& t : tiles)
      for (int64_t d : t.shape)
        for (int64_t f : divisors(d, 2, config.max_loop)) loops.insert(f);
    for (int64_t f : loops) {
      s.loop = f;
      choose_fmaps(s, tiles, 0, false);
    }
  }

  void choose_fmaps(BlockSchedule& s, const std::vector<TensorType>& tiles, size_t i, bool any) {
    if (i == tiles.size()) {
      if (any) emit(s);
      return;
    }
    IterChoice& c = s.iters[i];
    c.fmap = -1;
    c.post = false;
    choose_fmaps(s, tiles, i + 1, any);
    c.post = true;
    choose_fmaps(s, tiles, i + 1, any);
    c.post = false;
    for (int d = 0; d < static_cast<int>(tiles[i].shape.size()); ++d) {
      if (tiles[i].shape[d] % s.loop != 0 || !fmap_ok(i, d)) continue;
      c.fmap = static_cast<int8_t>(d);
      choose_fmaps(s, tiles, i + 1, true);
    }
    c.fmap = -1;
  }

  void emit(const BlockSchedule& s) {
    int64_t bytes = 0;
    for (size_t i = 0; i < operands.size(); ++i) {
      TensorType t = iter_tile_type(operands[i], s.iters[i], s);
      bytes += numel(t.shape) * dtype_bytes(t.dtype);
    }
    if (bytes > target.smem_per_block_bytes) return;
    out.push_back(s);
  }
};

// Estimated device-memory bytes a schedule loads per busy SM (replicated loads counted once per
// block) when its for-loop is spread over `split` times as many blocks (1: as it is).
double load_bytes_per_busy_sm(const std::vector<TensorType>& operands, const BlockSchedule& s,
                              int64_t split, int64_t sm_count) {
  const int64_t blocks = s.grid[0] * s.grid[1] * s.grid[2] * split;
  double per_block = 0;
  for (size_t i = 0; i < operands.size(); ++i) {
    TensorType t = iter_tile_type(operands[i], s.iters[i], s);
    double bytes = static_cast<double>(numel(t.shape)) * dtype_bytes(t.dtype);
    if (!s.iters[i].post && s.iters[i].fmap >= 0) bytes *= static_cast<double>(s.loop / split);
    per_block += bytes;
  }
  return per_block * static_cast<double>(blocks) /
         static_cast<double>(std::max<int64_t>(1, std::min(blocks, sm_count)));
}

// The order's estimate: the traffic per busy SM, or in final mode, where a for-loop that only
// sums may be split over more blocks (loop_split_factors; the split also needs no post-loop
// iterator), the least of it over the splits that step would try, so a schedule
// whose blocks are few but whose split fills the machine is not searched last.
double order_estimate(const std::vector<TensorType>& operands, const BlockSchedule& s,
                      const SearchConfig& config, const Target& target, bool final_mode) {
  double best = load_bytes_per_busy_sm(operands, s, 1, target.sm_count);
  const bool post_iter =
      std::any_of(s.iters.begin(), s.iters.end(), [](const IterChoice& c) { return c.post; });
  if (!final_mode || !config.split_reductions || post_iter) return best;
  for (int64_t f : loop_split_factors(s, config))
    best = std::min(best, load_bytes_per_busy_sm(operands, s, f, target.sm_count));
  return best;
}

}  // namespace

std::vector<int64_t> loop_split_factors(const BlockSchedule& s, const SearchConfig& config) {
  std::vector<int64_t> factors;
  if (s.loop < 4 || (s.grid[0] != 1 && s.grid[1] != 1 && s.grid[2] != 1)) return factors;
  const int64_t blocks = s.grid[0] * s.grid[1] * s.grid[2];
  for (int64_t f = 2; f <= s.loop / 2; ++f)
    if (s.loop % f == 0 && blocks * f <= config.max_blocks) factors.push_back(f);
  return factors;
}

std::array<int8_t, 3> grid_classes(const BlockSchedule& s, const ScheduleRules& rules) {
  std::array<int8_t, 3> cls = {kAnyClass, kAnyClass, kAnyClass};
  if (!rules.classes) return cls;
  for (int g = 0; g < 3; ++g)
    for (size_t i = 0; i < s.iters.size(); ++i)
      if (s.grid[g] > 1 && s.iters[i].imap[g] >= 0 && cls[g] == kAnyClass)
        cls[g] = rules.operand_classes[i][s.iters[i].imap[g]];
  return cls;
}

std::vector<BlockSchedule> enumerate_schedules(const std::vector<TensorType>& operands,
                                               const SearchConfig& config, const Target& target,
                                               const ScheduleRules& rules) {
  Enumerator e{operands, config, target, rules, {}};
  std::set<int64_t> sizes_set;
  for (const TensorType& t : operands)
    for (int64_t d : t.shape)
      for (int64_t g : divisors(d, 2, config.max_blocks)) sizes_set.insert(g);
  std::vector<int64_t> sizes(sizes_set.begin(), sizes_set.end());
  auto in_limits = [&](int64_t blocks) {
    return blocks >= config.min_blocks && blocks <= config.max_blocks &&
           blocks <= target.max_blocks_total;
  };
  for (int64_t x : sizes) {
    if (x > target.max_grid[0]) continue;
    if (in_limits(x)) e.with_grid({x, 1, 1});
    if (config.max_grid_dims < 2) continue;
    for (int64_t y : sizes) {
      if (y > target.max_grid[1] || x * y > config.max_blocks) continue;
      if (in_limits(x * y)) e.with_grid({x, y, 1});
      if (config.max_grid_dims < 3) continue;
      for (int64_t z : sizes)
        if (z <= target.max_grid[2] && in_limits(x * y * z)) e.with_grid({x, y, z});
    }
  }
  // Least traffic per busy SM first (a memory-bound kernel's time), so good kernels are found
  // early; ties keep enumeration order. Only the order depends on this estimate.
  std::vector<std::pair<double, size_t>> order;
  for (size_t i = 0; i < e.out.size(); ++i)
    order.emplace_back(order_estimate(operands, e.out[i], config, target, rules.final_mode), i);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<BlockSchedule> sorted;
  sorted.reserve(order.size());
  for (const auto& [cost, i] : order) sorted.push_back(e.out[i]);
  return sorted;
}

}  // namespace weft
