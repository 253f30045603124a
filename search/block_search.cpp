// Depth-first enumeration of block graphs in canonical order with abstract-expression pruning.
//
// Phases run in a fixed order — loop-body operators, accumulators, post-loop operators, savers —
// which loses no block graph: accumulators only read loop values and post operators only read
// accumulator results and post values. Within a phase, each new operator's key (largest operand
// number first) must exceed the previous one's, so each DAG is produced exactly once.
#include "search/block_search.h"

#include <algorithm>

#include "core/error.h"
#include "search/stype.h"

namespace weft {
namespace {

uint64_t make_key(const SketchOp& op) {
  auto u8 = [](int v) { return static_cast<uint64_t>(static_cast<uint8_t>(v + 1)); };
  int hi = std::max(op.a, op.b);
  return (u8(hi) << 56) | (u8(op.a) << 48) | (u8(op.b) << 40) |
         (static_cast<uint64_t>(op.kind) << 32) | (u8(op.dim) << 24) |
         (static_cast<uint64_t>(static_cast<uint16_t>(op.constant + 1)) << 8);
}

class Searcher {
 public:
  Searcher(const BlockSearchInput& in, const BlockSchedule& s, const SearchConfig& config,
           const SearchConstants& constants, ExprOracle& oracle, SearchStats& stats,
           StopSignal& stop, const std::function<bool(BlockSketch&&)>& emit)
      : in_(in),
        s_(s),
        config_(config),
        constants_(constants),
        oracle_(oracle),
        stats_(stats),
        stop_(stop),
        emit_(emit) {}

  int64_t run() {
    static const DimClasses kNoClasses;
    dc_ = in_.classes ? in_.classes : &kNoClasses;
    for (const TensorType& t : in_.final_output_types) final_types_.push_back(to_stype(t));
    ScheduleRules rules;
    rules.classes = in_.classes;
    rules.operand_classes = in_.operand_classes;
    grid_cls_ = grid_classes(s_, rules);
    for (size_t i = 0; i < in_.operand_types.size(); ++i) {
      TensorType tile = iter_tile_type(in_.operand_types[i], s_.iters[i], s_);
      Stage stage = s_.iters[i].post ? Stage::post : Stage::loop;
      SType t = to_stype(tile);
      uint64_t fmask = 0;
      if (in_.classes) {
        t.cls = in_.operand_classes[i];
        int f = s_.iters[i].fmap;
        if (f >= 0 && !s_.iters[i].post) fmask = t.cls[f] >= 0 ? uint64_t{1} << t.cls[f] : kAnyBit;
      }
      add_value(Val{t, in_.operand_terms[i], stage, 0, fmask});
    }
    n_iters_ = static_cast<int>(vals_.size());
    if (s_.loop == 1 || open_[0] == 0)
      post_phase(0);
    else
      loop_phase(0);
    flush_counters();
    return states_;
  }

 private:
  struct Val {
    SType type;
    TermRef term;
    Stage stage;
    int uses;
    uint64_t fmask;  // axis classes walked by the for-loop that this value depends on
  };
  static constexpr uint64_t kAnyBit = uint64_t{1} << 63;

  // Summing over iterations is right only if every axis the loop walks is one the program reduces
  // (and some axis is walked: else it adds up identical copies).
  bool accumulation_ok(const SketchOp& op) const {
    const Val& a = vals_[op.a];
    if (!in_.classes) return true;
    if (a.fmask == 0) return false;
    if (op.kind == OpKind::accum_concat) {
      int8_t c = a.type.cls[op.dim];
      return c == kAnyClass || (a.fmask & kAnyBit) || (c >= 0 && (a.fmask >> c & 1));
    }
    for (int c = 0; c < 63; ++c)
      if ((a.fmask >> c & 1) && !dc_->is_reduced(static_cast<int8_t>(c))) return false;
    return true;
  }

  // An operator over two values the for-loop walks along different axes would pair chunk i of
  // one axis with chunk i of the other, which the program never does (absent cancellation, the
  // assumption of abstract expressions); a sum of such terms is reached with one accumulator per
  // axis instead. Abstract expressions do not see which axis a loop walks, so without this rule
  // such block graphs pass them and cost a finite-field test each (gqa_attention: ~11 s).
  static bool one_walked_axis(uint64_t a, uint64_t b) {
    if (a == 0 || b == 0 || ((a | b) & kAnyBit)) return true;
    return a == b;
  }

  int count_ops(OpKind kind) const {
    int n = 0;
    for (const SketchOp& o : ops_) n += o.kind == kind;
    return n;
  }

  // The operator that produced value `v` (iterators: iter).
  OpKind producer_kind(int v) const {
    return v < n_iters_ ? OpKind::iter : ops_[static_cast<size_t>(v - n_iters_)].kind;
  }

  // --- bookkeeping -------------------------------------------------------------------------
  void add_value(Val v) {
    ++open_[static_cast<int>(v.stage)];
    vals_.push_back(v);
  }
  void use(int v) {
    if (vals_[v].uses++ == 0) --open_[static_cast<int>(vals_[v].stage)];
  }
  void unuse(int v) {
    if (--vals_[v].uses == 0) ++open_[static_cast<int>(vals_[v].stage)];
  }
  void push(const SketchOp& op, const SType& type, TermRef term, Stage result_stage) {
    uint64_t fmask =
        is_accumulator(op.kind) ? 0 : vals_[op.a].fmask | (op.b >= 0 ? vals_[op.b].fmask : 0);
    use(op.a);
    if (op.b >= 0) use(op.b);
    ops_.push_back(op);
    add_value(Val{type, term, result_stage, 0, fmask});
  }
  void pop() {
    const Val& v = vals_.back();
    --open_[static_cast<int>(v.stage)];
    vals_.pop_back();
    const SketchOp& op = ops_.back();
    if (op.b >= 0) unuse(op.b);
    unuse(op.a);
    ops_.pop_back();
  }
  // Lower bound on the operators still needed to close every open value (see docs/search.md).
  bool within_bound() const {
    int loop_open = open_[0], post_open = open_[1];
    int need =
        loop_open + std::max(0, post_open + (loop_open > 0 ? 1 : 0) - config_.max_block_outputs);
    return static_cast<int>(ops_.size()) + need <= config_.max_block_ops;
  }
  // Counters are kept per searcher and published every 1024 states (and at the end): shared
  // atomics touched on every state by every thread would contend on the hottest path.
  bool visit() {
    if ((++states_ & 1023) == 0) {
      flush_counters();
      // The state budget holds inside one block search too: a block graph whose values collapse
      // (sub(x, x) is 0, and 0 is a part of every target) escapes pruning, and one such search
      // could otherwise run unbounded between the kernel search's checks.
      stop_.count_states(stats_.states.load(std::memory_order_relaxed));
      return !stop_.should_stop() && !enough_;
    }
    return !stop_.stopped() && !enough_;
  }

  void flush_counters() {
    stats_.states.fetch_add(states_ - flushed_states_, std::memory_order_relaxed);
    stats_.pruned_expr.fetch_add(pruned_expr_, std::memory_order_relaxed);
    stats_.pruned_bound.fetch_add(pruned_bound_, std::memory_order_relaxed);
    flushed_states_ = states_;
    pruned_expr_ = pruned_bound_ = 0;
  }

  // Type and term of `op`; false if its operands do not fit.
  bool infer(const SketchOp& op, SType& out, TermRef& term) {
    const Val& a = vals_[op.a];
    int64_t k = 0;
    if (!infer_search_op(op.kind, a.type, op.b >= 0 ? &vals_[op.b].type : nullptr, op.dim, s_.loop,
                         *dc_, out, k))
      return false;
    if (is_accumulator(op.kind) && !accumulation_ok(op)) return false;
    Rational c;
    if (op.kind == OpKind::scale) c = constants_.factors[op.constant];
    if (op.kind == OpKind::shift) c = constants_.offsets[op.constant];
    term = oracle_.op_term(op.kind, a.term, op.b >= 0 ? vals_[op.b].term : 0, k, c);
    return true;
  }

  // Tries `op`; on success recurses with `next(key)`.
  template <class Next>
  void try_op(const SketchOp& op, uint64_t last_key, Stage result_stage, Next&& next) {
    uint64_t key = make_key(op);
    if (key <= last_key) return;
    if (!canonical(op.kind, op.a, op.b, [this](int v) { return producer_kind(v); })) return;
    if (op.b >= 0 && !one_walked_axis(vals_[op.a].fmask, vals_[op.b].fmask)) return;
    if (op.kind == OpKind::scale && count_ops(OpKind::scale) >= constants_.max_scales) return;
    if (op.kind == OpKind::shift && count_ops(OpKind::shift) >= constants_.max_shifts) return;
    SType type;
    TermRef term;
    if (!infer(op, type, term)) return;
    if (config_.pruning && !oracle_.viable(term)) {
      ++pruned_expr_;
      return;
    }
    push(op, type, term, result_stage);
    if (within_bound())
      next(key);
    else
      ++pruned_bound_;
    pop();
  }

  // Every operator of the configured set over values of `stage`, in key order.
  template <class Next>
  void expand(Stage stage, uint64_t last_key, Next&& next) {
    int n = static_cast<int>(vals_.size());
    for (OpKind kind : config_.block_ops) {
      const OpInfo& info = op_info(kind);
      for (int a = 0; a < n; ++a) {
        if (vals_[a].stage != stage) continue;
        SketchOp op;
        op.kind = kind;
        op.a = static_cast<int8_t>(a);
        op.stage = stage;
        switch (info.op_class) {
          case OpClass::unary:
            if (kind == OpKind::scale) {
              for (size_t c = 0; c < constants_.factors.size(); ++c) {
                op.constant = static_cast<int16_t>(c);
                try_op(op, last_key, stage, next);
              }
            } else if (kind == OpKind::shift) {
              for (size_t c = 0; c < constants_.offsets.size(); ++c) {
                op.constant = static_cast<int16_t>(c);
                try_op(op, last_key, stage, next);
              }
            } else {
              try_op(op, last_key, stage, next);
            }
            break;
          case OpClass::binary:
          case OpClass::matmul: {
            for (int b = info.commutative ? a : 0; b < n; ++b) {
              if (vals_[b].stage != stage) continue;
              op.b = static_cast<int8_t>(b);
              try_op(op, last_key, stage, next);
            }
            break;
          }
          case OpClass::reduction:
            for (int d = 0; d < vals_[a].type.rank; ++d) {
              if (vals_[a].type.d[d] == 1) continue;  // reducing a size-1 dim changes nothing
              op.dim = static_cast<int8_t>(d);
              try_op(op, last_key, stage, next);
            }
            break;
          case OpClass::movement:  // not search operators
          case OpClass::composite:
          case OpClass::structure:
          case OpClass::hierarchy:
          case OpClass::model:
            break;
        }
      }
    }
  }

  // --- phases ------------------------------------------------------------------------------
  void loop_phase(uint64_t last_key) {
    if (!visit()) return;
    accum_phase(0);
    if (static_cast<int>(ops_.size()) >= config_.max_block_ops) return;
    expand(Stage::loop, last_key, [this](uint64_t key) { loop_phase(key); });
  }

  void accum_phase(uint64_t last_key) {
    if (!visit()) return;
    if (open_[0] == 0) post_phase(0);
    if (static_cast<int>(ops_.size()) >= config_.max_block_ops) return;
    int n = static_cast<int>(vals_.size());
    for (int v = 0; v < n; ++v) {
      if (vals_[v].stage != Stage::loop) continue;
      for (OpKind kind : config_.accumulators) {
        SketchOp op;
        op.kind = kind;
        op.a = static_cast<int8_t>(v);
        op.stage = Stage::loop;
        if (kind == OpKind::accum_concat) {
          for (int d = 0; d < vals_[v].type.rank; ++d) {
            op.dim = static_cast<int8_t>(d);
            try_op(op, last_key, Stage::post, [this](uint64_t key) { accum_phase(key); });
          }
        } else {
          try_op(op, last_key, Stage::post, [this](uint64_t key) { accum_phase(key); });
        }
      }
    }
  }

  void post_phase(uint64_t last_key) {
    if (!visit()) return;
    save_phase();
    if (static_cast<int>(ops_.size()) >= config_.max_block_ops) return;
    expand(Stage::post, last_key, [this](uint64_t key) { post_phase(key); });
  }

  void save_phase() {
    if (open_[0] != 0) return;
    std::vector<int> open;
    for (int v = n_iters_; v < static_cast<int>(vals_.size()); ++v)
      if (vals_[v].uses == 0 && vals_[v].stage == Stage::post) open.push_back(v);
    // Post-stage iterators nobody read stay open too, and make the graph incomplete.
    for (int v = 0; v < n_iters_; ++v)
      if (vals_[v].uses == 0) return;
    if (open.empty() || static_cast<int>(open.size()) > config_.max_block_outputs) return;
    if (in_.final_mode) {
      // Cheap filter before enumerating omaps: each open value must be equivalent to an output.
      for (int v : open) {
        bool any = false;
        for (size_t o = 0; o < final_types_.size() && !any; ++o)
          any = final_types_[o].rank == vals_[v].type.rank &&
                oracle_.equivalent(vals_[v].term, static_cast<int>(o));
        if (!any) return;
      }
    }
    std::vector<SketchSave> saves(open.size());
    choose_omaps(open, saves, 0);
  }

  void choose_omaps(const std::vector<int>& open, std::vector<SketchSave>& saves, size_t i) {
    if (i == open.size()) {
      emit(saves);
      return;
    }
    saves[i].value = static_cast<int8_t>(open[i]);
    assign_omap(open, saves, i, 0);
  }

  void assign_omap(const std::vector<int>& open, std::vector<SketchSave>& saves, size_t i, int g) {
    if (g == 3) {
      choose_omaps(open, saves, i + 1);
      return;
    }
    auto& omap = saves[i].omap;
    if (s_.grid[g] == 1) {
      omap[g] = -1;
      assign_omap(open, saves, i, g + 1);
      return;
    }
    const SType& t = vals_[open[i]].type;
    for (int d = 0; d < t.rank; ++d) {
      bool taken = false;
      for (int h = 0; h < g; ++h) taken |= omap[h] == d;
      if (taken) continue;
      omap[g] = static_cast<int8_t>(d);
      assign_omap(open, saves, i, g + 1);
    }
    omap[g] = -1;
  }

  // The saved tensor's type and axis classes; `consistent` is false when a grid dim places its
  // blocks along a dim of a different axis than the one it cuts.
  SType saved_type(int v, const std::array<int8_t, 3>& omap, bool& consistent) const {
    SType t = vals_[v].type;
    consistent = true;
    for (int g = 0; g < 3; ++g) {
      if (omap[g] < 0) continue;
      int d = omap[g];
      int8_t tile = t.cls[d], grid = grid_cls_[g];
      if (t.d[d] == 1) {
        t.cls[d] = grid;
      } else if (tile != kAnyClass && grid != kAnyClass && tile != grid) {
        consistent = false;
        t.cls[d] = kAnyClass;
        if (dc_->is_reduced(grid) && t.part[d] == 0) {
          // Partial sums over the cut axis, one tile per block: a later sum to the tile size
          // combines them (FlashDecoding's split KV, split-K).
          t.part[d] = t.d[d];
          t.part_cls[d] = tile;
        }
      }
      t.d[d] *= s_.grid[g];
    }
    return t;
  }

  // In final mode: the program output that saving value `v` with `omap` would produce, or -1.
  int final_output_of(int v, const std::array<int8_t, 3>& omap) {
    bool consistent = true;
    SType t = saved_type(v, omap, consistent);
    if (!consistent) return -1;
    for (size_t o = 0; o < final_types_.size(); ++o) {
      if (!(final_types_[o] == t)) continue;
      bool axes = true;
      if (in_.classes)
        for (int d = 0; d < t.rank; ++d) {
          int8_t want = in_.classes->output_dims[o][d];
          axes &= t.cls[d] == kAnyClass || want == kAnyClass || t.cls[d] == want;
        }
      if (axes && oracle_.equivalent(vals_[v].term, static_cast<int>(o)))
        return static_cast<int>(o);
    }
    return -1;
  }

  void emit(const std::vector<SketchSave>& saves) {
    if (in_.final_mode) {
      std::vector<bool> covered(final_types_.size(), false);
      for (const SketchSave& sv : saves) {
        int o = final_output_of(sv.value, sv.omap);
        if (o < 0 || covered[o]) return;
        covered[o] = true;
      }
    }
    BlockSketch sk;
    sk.schedule = s_;
    sk.ops = ops_;
    sk.saves = saves;
    for (const SketchSave& sv : saves) {
      bool consistent = true;
      SType t = saved_type(sv.value, sv.omap, consistent);
      sk.output_types.push_back(to_tensor_type(t));
      sk.output_terms.push_back(vals_[sv.value].term);
      sk.output_classes.push_back(t.cls);
      sk.output_parts.push_back(t.part);
      sk.output_part_classes.push_back(t.part_cls);
    }
    stats_.block_graphs.fetch_add(1, std::memory_order_relaxed);
    if (!emit_(std::move(sk))) enough_ = true;
  }

  const BlockSearchInput& in_;
  const BlockSchedule& s_;
  const SearchConfig& config_;
  const SearchConstants& constants_;
  ExprOracle& oracle_;
  SearchStats& stats_;
  StopSignal& stop_;
  const std::function<bool(BlockSketch&&)>& emit_;

  std::vector<Val> vals_;
  const DimClasses* dc_ = nullptr;
  std::array<int8_t, 3> grid_cls_ = {kAnyClass, kAnyClass, kAnyClass};
  std::vector<SType> final_types_;
  std::vector<SketchOp> ops_;
  int open_[2] = {0, 0};  // unconsumed values per stage
  int n_iters_ = 0;
  int64_t states_ = 0, flushed_states_ = 0, pruned_expr_ = 0, pruned_bound_ = 0;
  bool enough_ = false;  // `emit` asked for no more block graphs
};

}  // namespace

int64_t search_block_graphs(const BlockSearchInput& in, const BlockSchedule& s,
                            const SearchConfig& config, const SearchConstants& constants,
                            ExprOracle& oracle, SearchStats& stats, StopSignal& stop,
                            const std::function<bool(BlockSketch&&)>& emit) {
  Searcher searcher(in, s, config, constants, oracle, stats, stop, emit);
  return searcher.run();
}

}  // namespace weft
