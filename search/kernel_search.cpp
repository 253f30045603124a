// Depth-first enumeration of kernel graphs in canonical order; graph-defined kernels get their
// block graphs from a memoized, parallel block search.
#include "search/kernel_search.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "core/parallel.h"
#include "search/materialize.h"
#include "search/operand_sets.h"
#include "search/signature.h"
#include "search/split_reduction.h"
#include "search/stype.h"

namespace weft {

SearchConstants constants_of(const Graph& program) {
  std::set<Rational> factors, offsets;
  for (const Op& op : program.ops) {
    if (op.kind == OpKind::scale) factors.insert(op.attrs.get_rational("factor"));
    if (op.kind == OpKind::shift) offsets.insert(op.attrs.get_rational("offset"));
    if (op.kind == OpKind::mean) {
      // mean = sum, then a scale by 1/(elements per group): a fused graph may split the two.
      const Shape& s = program.type(op.inputs[0]).shape;
      int64_t group = s[op.attrs.get_int("dim")] / op.attrs.get_int("to");
      factors.insert(*Rational::make(1, group));
    }
  }
  SearchConstants c{{factors.begin(), factors.end()}, {offsets.begin(), offsets.end()}, 0, 0};
  for (const Op& op : program.ops) {
    c.max_scales += op.kind == OpKind::scale || op.kind == OpKind::mean;
    c.max_shifts += op.kind == OpKind::shift;
  }
  return c;
}

namespace {

// Work of a block graph under its schedule: loop-stage operators run `loop` times.
int64_t work_of(const BlockSketch& sk) {
  int64_t w = 0;
  for (const SketchOp& op : sk.ops) w += op.stage == Stage::loop ? sk.schedule.loop : 1;
  return w;
}

// Elements a block graph's saves write to device memory.
int64_t saved_elements(const BlockSketch& sk) {
  int64_t n = 0;
  for (const TensorType& t : sk.output_types) n += numel(t.shape);
  return n;
}

// Lexicographic canonical key of a kernel-level operator.
using KKey = std::tuple<int, int, int, uint64_t, int, int, int, int64_t>;

struct KVal {
  SType type;
  TermRef term;
  int uses = 0;
};

struct KOp {
  OpKind kind = OpKind::add;
  std::vector<int> inputs;
  int8_t dim = -1;
  int16_t constant = -1;
  int64_t to = 1;                       // reductions: the size reduced to
  const BlockSketch* sketch = nullptr;  // graph-defined kernels
  std::vector<int> outputs;
};

class KernelSearcher {
 public:
  KernelSearcher(const KernelSearchContext& ctx, const std::function<void(Graph&&)>& emit)
      : ctx_(ctx),
        emit_(emit),
        own_memory_(0, ctx.stop),
        memory_(ctx.memory ? ctx.memory : &own_memory_) {
    // Block graphs in tiers of size 3, 6, 12, ... up to max_block_ops.
    for (int limit = 3;; limit *= 2) {
      block_tiers_.push_back(ctx.config);
      block_tiers_.back().max_block_ops = std::min(limit, ctx.config.max_block_ops);
      if (limit >= ctx.config.max_block_ops) break;
    }
  }

  void run() {
    const Graph& p = ctx_.program;
    for (size_t i = 0; i < p.inputs.size(); ++i) {
      SType t = to_stype(p.type(p.inputs[i]));
      if (ctx_.classes.usable) t.cls = ctx_.classes.input_dims[i];
      vals_.push_back(KVal{t, ctx_.oracle.input_term(static_cast<int>(i)), 0});
    }
    for (ValueId o : p.outputs) output_types_.push_back(to_stype(p.type(o)));
    // Iterative deepening: all µGraphs of one kernel operator first, then two, ...; each level
    // emits only graphs of exactly that size, so nothing is emitted twice. With a time budget,
    // level d of n must end by d/n of the time left at the start (after any seeds' searches) and
    // a level that ends early leaves its time to the next, so every size is reached; a level also
    // ends when the driver sees the best stop improving (StopSignal::end_level, converge_s).
    const int levels = ctx_.config.max_kernel_ops;
    const double started_s = ctx_.stop.elapsed_s();
    for (depth_ = 1; depth_ <= levels && !ctx_.stop.search_stopped(); ++depth_) {
      ctx_.stop.start_level(ctx_.stop.budget().until(depth_, levels, started_s));
      tier_reached_ = 0;
      ctx_.stats.levels_reached.fetch_add(1);
      search_level();
      if (ctx_.stop.level_ended() && !ctx_.stop.search_stopped())
        (ctx_.stop.level_end() == StopReason::converged ? ctx_.stats.levels_converged
                                                        : ctx_.stats.levels_cut)
            .fetch_add(1);
    }
    ctx_.stop.end_levels();
    track_memory();
  }

 private:
  bool visit() {
    ctx_.stats.states.fetch_add(1, std::memory_order_relaxed);
    ctx_.stop.count_states(ctx_.stats.states.load());
    if ((++visits_ & 1023) == 0) track_memory();
    return !ctx_.stop.should_stop();
  }

  // Brings the account up to date with the oracle's terms (which the block searches create as
  // they go) and samples it. Called on this thread only while no block search runs, so both the
  // figure and any budget decision it triggers are the same every run.
  void track_memory() {
    int64_t now = ctx_.oracle.memory_bytes();
    memory_->add(now - oracle_bytes_);
    oracle_bytes_ = now;
    memory_->sample();
  }

  // One level in two parts, each with its own convergence window (restarted by larger block
  // graphs): graphs starting with a graph-defined kernel, then with a pre-defined operator. The
  // first kind are many, and a level converging in them never reached, say, a library matmul
  // under one fused kernel. The level's time share still ends both.
  void search_level() {
    const KKey root{-1, -1, -1, 0, -1, -1, -1, -1};
    if (!visit()) return;
    if (ctx_.config.max_graph_defined_kernels > 0) expand_graph_defined(root);
    if (!ctx_.stop.resume_converged_level()) return;
    tier_reached_ = 0;  // the second part's larger block graphs restart its window too
    expand_predefined(root);
  }

  void dfs(const KKey& last) {
    if (!visit()) return;
    if (static_cast<int>(ops_.size()) >= depth_) return;
    if (n_graph_defined_ < ctx_.config.max_graph_defined_kernels) expand_graph_defined(last);
    expand_predefined(last);
  }

  // --- graph-defined kernels ---------------------------------------------------------------
  void expand_graph_defined(const KKey& last) {
    int n = static_cast<int>(vals_.size());
    int max_operands = std::min(ctx_.config.max_kernel_operands, n);
    bool final = static_cast<int>(ops_.size()) == depth_ - 1;
    // Operand subsets. The last kernel alone takes larger ones first (a fused kernel producing
    // the outputs reads many tensors). An intermediate kernel takes smaller ones first: its block
    // search must finish every schedule before anything is built above it, and over many
    // operands that can take a level's whole time, starving the small kernels (a normalisation
    // of one input) multi-kernel µGraphs are built from. Canonical keys keep graphs unique.
    // A last kernel above others must read every earlier kernel's result that nothing reads yet
    // and that is no program output (else that kernel is dead and the graph is never complete).
    // With those in, it takes small sets first too: the kernels below did part of the work, and
    // the small block searches are cheap, where one over four operands can take a level's time.
    const std::vector<OperandSet> subsets =
        operand_sets(n, max_operands, final ? dangling_results() : std::vector<uint64_t>{},
                     final && ops_.empty());
    if (!final) {
      // Block-graph sizes deepen too: every operand set's small block graphs before any large
      // one's (block_tiers_).
      for (size_t tier = 0; tier < block_tiers_.size(); ++tier) {
        reach_tier(tier);
        for (const auto& [hi, mask] : subsets) {
          std::vector<int> operands = operand_values(mask);
          // With the memo full, a larger tier's new entry could keep no block graph (ensure_done
          // searches nothing then): only entries made before are built on.
          auto results = tier > 0 && memory_->memo_full()
                             ? ctx_.memo.find(memo_key(operands, false, tier))
                             : block_results(operands, false, tier);
          if (!results) continue;
          expand_intermediate(results, operands, hi, mask, last, tier);
          if (ctx_.stop.stopped()) return;
        }
      }
      return;
    }
    // The last kernel: above earlier kernels, in tiers as well, since its block search repeats
    // for every kernel graph below it (the cheap small block graphs of all of them first). As the
    // only kernel, at full size at once: it is searched once per level, and a level converging
    // on small block graphs would not reach the large ones (an attention's one kernel needs 8).
    const size_t first_tier = ops_.empty() ? block_tiers_.size() - 1 : 0;
    for (size_t tier = first_tier; tier < block_tiers_.size(); ++tier) {
      const int smaller = tier == first_tier ? -1 : block_tiers_[tier - 1].max_block_ops;
      reach_tier(tier);
      for (const auto& [hi, mask] : subsets) {
        std::vector<int> operands = operand_values(mask);
        auto results = block_results(operands, true, tier);
        for (size_t s = 0; s < results->schedules.size(); ++s) {
          ensure_done(results, operands, true, s, tier);
          if (ctx_.stop.stopped()) return;
          const auto& sketches = results->per_schedule[s];
          for (size_t j = 0; j < sketches.size(); ++j) {
            if (static_cast<int>(sketches[j].ops.size()) <= smaller) continue;
            if (!descend_graph_defined(operands, sketches[j], kernel_key(hi, mask, s, j, tier),
                                       last))
              continue;
            if (ctx_.config.split_reductions) expand_splits(operands, sketches[j]);
            if (ctx_.stop.stopped()) return;
          }
        }
      }
    }
  }

  // The split-reduction variants of a final-mode block graph (split_reduction.h): its kernel
  // with the loop spread over more blocks, then the operators combining the partials, either as
  // pre-defined kernel operators or fused into one more graph-defined kernel (FlashDecoding's
  // combine step). Emitted like any candidate when the outputs match the program's.
  void expand_splits(const std::vector<int>& operands, const BlockSketch& sk) {
    BlockSearchInput in = search_input(operands, true);
    std::vector<SplitVariant> variants = split_reduction_variants(
        sk, in.operand_types, in.operand_terms, ctx_.config, ctx_.constants, ctx_.oracle);
    for (const SplitVariant& var : variants) {
      const size_t mark = ops_.size();
      push_graph_defined(operands, var.partial);
      const int base = static_cast<int>(vals_.size() - var.partial.saves.size());
      if (push_tail(var, base)) {
        if (static_cast<int>(ops_.size()) <= ctx_.config.max_kernel_ops && check_complete())
          ctx_.stats.split_candidates.fetch_add(1, std::memory_order_relaxed);
        if (n_graph_defined_ < ctx_.config.max_graph_defined_kernels &&
            static_cast<int>(mark) + 2 <= ctx_.config.max_kernel_ops) {
          BlockSketch combine = combine_kernel(sk, var, [&](int v) {
            const KVal& kv = vals_.at(static_cast<size_t>(base + v));
            return ReplayedValue{kv.type, kv.term};
          });
          while (ops_.size() > mark + 1) pop();
          std::vector<int> partial_outputs;
          for (size_t i = 0; i < var.partial.saves.size(); ++i)
            partial_outputs.push_back(base + static_cast<int>(i));
          push_graph_defined(partial_outputs, combine);
          if (check_complete()) ctx_.stats.split_candidates.fetch_add(1, std::memory_order_relaxed);
        }
      }
      while (ops_.size() > mark) pop();
      if (ctx_.stop.stopped()) return;
    }
  }

  // Pushes the tail of a split variant as pre-defined operators after its partial kernel (whose
  // first output is value `base`). False if an operator does not fit its operands.
  bool push_tail(const SplitVariant& var, int base) {
    for (const TailOp& t : var.tail) {
      const KVal& a = vals_.at(static_cast<size_t>(base + t.inputs.at(0)));
      const KVal* b =
          t.inputs.size() > 1 ? &vals_.at(static_cast<size_t>(base + t.inputs[1])) : nullptr;
      SType type;
      int64_t k = 0;
      if (!infer_search_op(t.kind, a.type, b ? &b->type : nullptr, t.dim, 1, ctx_.classes, type, k,
                           t.to))
        return false;
      Rational c;
      if (t.kind == OpKind::scale) c = ctx_.constants.factors.at(static_cast<size_t>(t.constant));
      if (t.kind == OpKind::shift) c = ctx_.constants.offsets.at(static_cast<size_t>(t.constant));
      TermRef term = ctx_.oracle.op_term(t.kind, a.term, b ? b->term : 0, k, c);
      KOp op;
      op.kind = t.kind;
      for (int v : t.inputs) op.inputs.push_back(base + v);
      op.dim = t.dim;
      op.constant = t.constant;
      op.to = t.to;
      for (int v : op.inputs) ++vals_[static_cast<size_t>(v)].uses;
      op.outputs.push_back(static_cast<int>(vals_.size()));
      vals_.push_back(KVal{type, term, 0});
      ops_.push_back(std::move(op));
    }
    return true;
  }

  // A graph-defined kernel whose outputs feed later kernel operators. Its block graphs are
  // searched for every schedule first; then each output signature is expanded for at most
  // `intermediate_variants` block graphs, those of the schedules with the least estimated traffic
  // (schedule order): the kernel graphs above them are the same for every variant.
  void expand_intermediate(const std::shared_ptr<BlockResults>& results,
                           const std::vector<int>& operands, int hi, uint64_t mask,
                           const KKey& last, size_t tier) {
    // Schedule by schedule: each schedule's kept block graphs are built on as soon as it is
    // done, instead of after every schedule. The kept set is the same (the first
    // `intermediate_variants` per signature, in schedule order); the kernel graphs above the
    // first schedules are just built sooner. Block graphs within the previous tier's size were
    // built on in that tier.
    const int smaller = tier == 0 ? -1 : block_tiers_[tier - 1].max_block_ops;
    size_t next = 0;  // the first entry of `kept` this call has not descended into
    for (size_t s = 0; s < results->schedules.size(); ++s) {
      ensure_done(results, operands, false, s, tier);
      if (ctx_.stop.stopped()) return;
      take_in_schedule(*results, s);
      // Only this thread grows `kept` (the kernel search is one thread; block searches are
      // parallel inside ensure_done), so indexing it here needs no lock.
      for (; next < results->kept.size() && results->kept[next].first <= s; ++next) {
        const auto [ks, kj] = results->kept[next];
        const BlockSketch& sk = results->per_schedule[ks][kj];
        if (static_cast<int>(sk.ops.size()) <= smaller) continue;
        descend_graph_defined(operands, sk, kernel_key(hi, mask, ks, kj, tier), last);
        if (ctx_.stop.stopped()) return;
      }
    }
  }

  // The first time a level searches block graphs of tier `tier`, its convergence clock restarts:
  // a level that found nothing with small block graphs has not yet tried the large ones (an
  // attention's one kernel needs 8 operators), so the smaller tiers' time must not count
  // against them. At most one restart per tier and level; the level's time share still holds.
  void reach_tier(size_t tier) {
    if (tier <= tier_reached_) return;
    tier_reached_ = tier;
    ctx_.stop.restart_convergence_clock();
  }

  // Adds schedule `s`'s block graphs to `r.kept` (at most config.intermediate_variants per
  // signature, counting the earlier schedules'), once, when the schedules before it are in.
  void take_in_schedule(BlockResults& r, size_t s) {
    std::lock_guard<std::mutex> lock(r.mu);
    if (r.kept_through != s) return;
    auto at = [&](uint64_t ref) -> const BlockSketch& {
      return r.per_schedule[ref >> 32][ref & 0xffffffff];
    };
    int64_t before = r.kept_count.bytes() + heap_bytes(r.kept);
    int cap = std::max(1, ctx_.config.intermediate_variants);
    const size_t first = r.kept.size();
    for (size_t j = 0; j < r.per_schedule[s].size(); ++j) {
      const BlockSketch& sk = r.per_schedule[s][j];
      uint64_t hash = signature_hash(sk);
      SignatureTable::Entry* e = r.kept_count.find(sk, hash, at);
      if (!e) e = &r.kept_count.insert(hash, uint64_t{s} << 32 | j, 0);
      if (++e->value <= cap) r.kept.emplace_back(s, j);
    }
    // Within the schedule, the block graphs that save the least first: an intermediate that
    // shrinks its operands (a reduction's statistic) makes the kernels above it cheap to search
    // and to run, where one the size of its operands (an elementwise copy) rarely pays. Only
    // the order of descent changes, not which kernel graphs exist (canonical keys decide that).
    std::stable_sort(r.kept.begin() + static_cast<std::ptrdiff_t>(first), r.kept.end(),
                     [&](const auto& a, const auto& b) {
                       return saved_elements(r.per_schedule[s][a.second]) <
                              saved_elements(r.per_schedule[s][b.second]);
                     });
    r.kept_through = s + 1;
    memory_->add(r.kept_count.bytes() + heap_bytes(r.kept) - before);
  }

  // The canonical key of a graph-defined kernel: its largest operand, operand set, and block
  // graph (schedule s, sketch j).
  static KKey kernel_key(int hi, uint64_t mask, size_t s, size_t j, size_t tier = 0) {
    return KKey{hi,
                -1,
                -1,
                mask,
                static_cast<int>(OpKind::kernel),
                -1,
                -1,
                static_cast<int64_t>(uint64_t{tier} << 56 | s << 24 | j)};
  }

  // Adds the kernel and searches on above it, if its key follows `last`; false if it does not.
  bool descend_graph_defined(const std::vector<int>& operands, const BlockSketch& sk,
                             const KKey& key, const KKey& last) {
    if (key <= last) return false;
    push_graph_defined(operands, sk);
    after_push(key);
    pop();
    return true;
  }

  // The memo entry (schedules, and what is known of each) for `operands`.
  // `tier`: the block graphs' size (block_tiers_).
  std::shared_ptr<BlockResults> block_results(const std::vector<int>& operands, bool final,
                                              size_t tier = 0) {
    BlockSearchInput in = search_input(operands, final);
    const std::vector<TensorType>& types = in.operand_types;
    const std::string key = memo_key(operands, final, tier);
    auto results = ctx_.memo.get_or_create(key, [&](BlockResults& r) {
      ScheduleRules rules;
      rules.classes = in.classes;
      rules.operand_classes = in.operand_classes;
      rules.final_mode = final;
      rules.sum_accumulators_only =
          std::find(ctx_.config.accumulators.begin(), ctx_.config.accumulators.end(),
                    OpKind::accum_concat) == ctx_.config.accumulators.end();
      r.schedules = enumerate_schedules(types, ctx_.config, ctx_.target, rules);
      r.per_schedule.resize(r.schedules.size());
      r.done.assign(r.schedules.size(), false);
      r.states.assign(r.schedules.size(), 0);
      r.truncated.assign(r.schedules.size(), false);
      memory_->add(BlockMemo::entry_bytes(key, r));
    });
    return results;
  }

  // Keyed by text, not term ids, so a checkpoint restores into a fresh term store.
  std::string memo_key(const std::vector<int>& operands, bool final, size_t tier) const {
    std::string key =
        fmt::format("{}{};", final ? "final" : "any", block_tiers_[tier].max_block_ops);
    for (int v : operands)
      key += fmt::format("{}:{}:{};", to_tensor_type(vals_[v].type).str(),
                         ctx_.oracle.text(vals_[v].term), fmt::join(vals_[v].type.cls, ","));
    return key;
  }

  BlockSearchInput search_input(const std::vector<int>& operands, bool final) const {
    BlockSearchInput in;
    in.final_mode = final;
    if (final)
      for (const SType& t : output_types_) in.final_output_types.push_back(to_tensor_type(t));
    for (int v : operands) {
      in.operand_types.push_back(to_tensor_type(vals_[v].type));
      in.operand_terms.push_back(vals_[v].term);
    }
    if (ctx_.classes.usable) {
      in.classes = &ctx_.classes;
      for (int v : operands) in.operand_classes.push_back(vals_[v].type.cls);
    }
    return in;
  }

  // Searches schedule `first` if not done yet, together with the next few not-done schedules in
  // parallel (results are stored per schedule, so the order of completion does not matter).
  void ensure_done(const std::shared_ptr<BlockResults>& results, const std::vector<int>& operands,
                   bool final, size_t first, size_t tier = 0) {
    const SearchConfig& config = block_tiers_[tier];
    std::vector<size_t> todo;
    {
      std::lock_guard<std::mutex> lock(results->mu);
      if (results->done[first]) return;
      size_t chunk = static_cast<size_t>(std::max(8, 4 * ctx_.threads));
      for (size_t i = first; i < results->schedules.size() && todo.size() < chunk; ++i)
        if (!results->done[i]) todo.push_back(i);
    }
    BlockSearchInput in = search_input(operands, final);
    parallel_for_index(static_cast<int64_t>(todo.size()), ctx_.threads, [&](int64_t t) {
      size_t i = todo[static_cast<size_t>(t)];
      // The clock, not just the flag: most schedules' searches end long before the block search
      // reads it (every 1024 states), and an operand set can have a million schedules.
      if (ctx_.stop.should_stop()) return;
      // What this worker holds, counted as it grows; given back if the schedule is abandoned.
      MemoryAccount::Share share(*memory_);
      std::vector<BlockSketch> found;
      int64_t sketch_bytes = 0;  // heap memory of the block graphs in `found`
      // Intermediate mode: signature -> index in `found` of the least-work block graph so far
      // (the first found on ties), so dominated block graphs are never stored.
      SignatureTable best;
      auto at = [&](uint64_t ref) -> const BlockSketch& { return found[ref]; };
      auto held = [&] { return heap_bytes(found) + sketch_bytes + best.bytes(); };
      // With the memo full, intermediate-mode block graphs with new signatures are not kept (their
      // kernel graphs are not built): the search goes on over what the memo holds.
      bool truncated = !final && memory_->memo_full();
      auto take = [&](BlockSketch&& sk) {
        if (final) {
          sketch_bytes += heap_bytes(sk);
          found.push_back(std::move(sk));
          share.set(held());
          return true;
        }
        uint64_t hash = signature_hash(sk);
        if (SignatureTable::Entry* e = best.find(sk, hash, at)) {
          BlockSketch& kept = found[e->ref];
          if (work_of(sk) < work_of(kept)) {
            sketch_bytes += heap_bytes(sk) - heap_bytes(kept);
            kept = std::move(sk);
          }
          return true;
        }
        if (memory_->memo_full()) {
          truncated = true;
          return false;  // ends this block search: nothing more would be stored
        }
        best.insert(hash, found.size(), 0);
        sketch_bytes += heap_bytes(sk);
        found.push_back(std::move(sk));
        share.set(held());
        return true;
      };
      int64_t states = 0;
      if (!truncated)
        states = search_block_graphs(in, results->schedules[i], config, ctx_.constants, ctx_.oracle,
                                     ctx_.stats, ctx_.stop, take);
      if (ctx_.stop.stopped()) return;  // an interrupted schedule is redone on resume
      found.shrink_to_fit();            // the memo keeps it for the whole search
      share.commit(heap_bytes(found) + sketch_bytes);
      std::lock_guard<std::mutex> lock(results->mu);
      results->per_schedule[i] = std::move(found);
      results->states[i] = states;
      results->done[i] = true;
      results->truncated[i] = truncated;
    });
    ctx_.stop.count_states(ctx_.stats.states.load());
    track_memory();
  }

  void push_graph_defined(const std::vector<int>& operands, const BlockSketch& sk) {
    KOp op;
    op.kind = OpKind::kernel;
    op.inputs = operands;
    op.sketch = &sk;
    for (int v : operands) ++vals_[v].uses;
    for (size_t i = 0; i < sk.output_types.size(); ++i) {
      op.outputs.push_back(static_cast<int>(vals_.size()));
      SType t = to_stype(sk.output_types[i]);
      if (i < sk.output_classes.size()) t.cls = sk.output_classes[i];
      if (i < sk.output_parts.size()) {
        t.part = sk.output_parts[i];
        t.part_cls = sk.output_part_classes[i];
      }
      vals_.push_back(KVal{t, sk.output_terms[i], 0});
    }
    ops_.push_back(std::move(op));
    ++n_graph_defined_;
  }

  // For each earlier operator none of whose results is read yet or is a program output: the
  // mask of its results, one of which the last kernel must read.
  std::vector<uint64_t> dangling_results() {
    std::vector<uint64_t> required;
    for (const KOp& op : ops_) {
      uint64_t mask = 0;
      bool live = false;
      for (int o : op.outputs) {
        mask |= 1ULL << o;
        live |= vals_[o].uses > 0 || is_output(vals_[o].type, vals_[o].term);
      }
      if (!live) required.push_back(mask);
    }
    return required;
  }

  // --- pre-defined operators ---------------------------------------------------------------
  int count_ops(OpKind kind) const {
    int n = 0;
    for (const KOp& op : ops_) n += op.kind == kind;
    return n;
  }

  OpKind producer_kind(int v) const {
    for (const KOp& op : ops_)
      for (int o : op.outputs)
        if (o == v) return op.kind;
    return OpKind::iter;  // a program input
  }

  bool is_output(const SType& type, TermRef term) {
    for (size_t o = 0; o < output_types_.size(); ++o)
      if (output_types_[o] == type && ctx_.oracle.equivalent(term, static_cast<int>(o)))
        return true;
    return false;
  }

  void expand_predefined(const KKey& last) {
    int n = static_cast<int>(vals_.size());
    bool last_level = static_cast<int>(ops_.size()) == depth_ - 1;
    for (OpKind kind : ctx_.config.kernel_ops) {
      const OpInfo& info = op_info(kind);
      for (int a = 0; a < n; ++a) {
        // `to` > 1 only for a reduction combining the blocks' partial results (stype.h).
        auto attempt = [&](int b, int dim, int constant, int64_t to = 1) {
          int hi = std::max(a, b);
          KKey key{hi, a, b, 0, static_cast<int>(kind), dim, constant, to};
          if (key <= last) return;
          if (!canonical(kind, a, b, [this](int v) { return producer_kind(v); })) return;
          if (kind == OpKind::scale && count_ops(OpKind::scale) >= ctx_.constants.max_scales)
            return;
          if (kind == OpKind::shift && count_ops(OpKind::shift) >= ctx_.constants.max_shifts)
            return;
          SType out;
          int64_t k = 0;
          if (!infer_search_op(kind, vals_[a].type, b >= 0 ? &vals_[b].type : nullptr, dim, 1,
                               ctx_.classes, out, k, to))
            return;
          Rational c;
          if (kind == OpKind::scale) c = ctx_.constants.factors[constant];
          if (kind == OpKind::shift) c = ctx_.constants.offsets[constant];
          TermRef term = ctx_.oracle.op_term(kind, vals_[a].term, b >= 0 ? vals_[b].term : 0, k, c);
          if (ctx_.config.pruning && !ctx_.oracle.viable(term)) {
            ctx_.stats.pruned_expr.fetch_add(1, std::memory_order_relaxed);
            return;
          }
          if (last_level && !is_output(out, term)) return;
          KOp op;
          op.kind = kind;
          op.inputs = b >= 0 ? std::vector<int>{a, b} : std::vector<int>{a};
          op.dim = static_cast<int8_t>(dim);
          op.constant = static_cast<int16_t>(constant);
          op.to = to;
          for (int v : op.inputs) ++vals_[v].uses;
          op.outputs.push_back(static_cast<int>(vals_.size()));
          vals_.push_back(KVal{out, term, 0});
          ops_.push_back(std::move(op));
          after_push(key);
          pop();
        };
        switch (info.op_class) {
          case OpClass::unary:
            if (kind == OpKind::scale)
              for (size_t c = 0; c < ctx_.constants.factors.size(); ++c)
                attempt(-1, -1, static_cast<int>(c));
            else if (kind == OpKind::shift)
              for (size_t c = 0; c < ctx_.constants.offsets.size(); ++c)
                attempt(-1, -1, static_cast<int>(c));
            else
              attempt(-1, -1, -1);
            break;
          case OpClass::binary:
          case OpClass::matmul: {
            for (int b = info.commutative ? a : 0; b < n; ++b) attempt(b, -1, -1);
            break;
          }
          case OpClass::reduction:
            for (int d = 0; d < vals_[a].type.rank; ++d) {
              if (vals_[a].type.d[d] > 1) attempt(-1, d, -1);
              if (ctx_.config.reduce_to_groups && vals_[a].type.part[d] > 1)
                attempt(-1, d, -1, vals_[a].type.part[d]);
            }
            break;
          case OpClass::movement:  // not search operators
          case OpClass::composite:
          case OpClass::structure:
          case OpClass::hierarchy:
          case OpClass::model:
            break;
        }
        if (ctx_.stop.stopped()) return;
      }
    }
  }

  void pop() {
    KOp& op = ops_.back();
    if (op.kind == OpKind::kernel) --n_graph_defined_;
    vals_.resize(vals_.size() - op.outputs.size());
    for (int v : op.inputs) --vals_[v].uses;
    ops_.pop_back();
  }

  // After an operator was added: emit if complete, then go deeper.
  void after_push(const KKey& key) {
    if (static_cast<int>(ops_.size()) == depth_)
      check_complete();
    else
      dfs(key);
  }

  // Emits the current kernel graph if it computes every program output; true if emitted.
  bool check_complete() {
    const KOp& last = ops_.back();
    std::vector<int> outputs;
    bool uses_last = false;
    for (size_t i = 0; i < output_types_.size(); ++i) {
      // Each output its own value: an oracle whose saturation stopped at a limit calls every
      // viable term equivalent (absexpr/oracle.h), so two outputs can match one value, and a
      // graph cannot return one value twice (the verifier rejects any wrong match later).
      int found = -1;
      for (int v = static_cast<int>(vals_.size()) - 1; v >= 0 && found < 0; --v)
        if (vals_[v].type == output_types_[i] &&
            std::find(outputs.begin(), outputs.end(), v) == outputs.end() &&
            ctx_.oracle.equivalent(vals_[v].term, static_cast<int>(i)))
          found = v;
      if (found < 0) return false;
      outputs.push_back(found);
      uses_last |= std::find(last.outputs.begin(), last.outputs.end(), found) != last.outputs.end();
    }
    if (!uses_last) return false;
    // Every operator must contribute to an output (else a smaller graph yields the same result).
    std::vector<bool> live(vals_.size(), false);
    for (int o : outputs) live[o] = true;
    for (int i = static_cast<int>(ops_.size()) - 1; i >= 0; --i) {
      bool any = false;
      for (int o : ops_[i].outputs) any |= live[o];
      if (!any) return false;
      for (int v : ops_[i].inputs) live[v] = true;
    }
    ctx_.stats.candidates.fetch_add(1, std::memory_order_relaxed);
    emit_(materialize(outputs));
    return true;
  }

  Graph materialize(const std::vector<int>& outputs) {
    const Graph& p = ctx_.program;
    std::vector<std::string> names(vals_.size());
    for (size_t i = 0; i < p.inputs.size(); ++i) names[i] = p.value(p.inputs[i]).name;
    int next = 1;
    for (size_t v = p.inputs.size(); v < vals_.size(); ++v) names[v] = fmt::format("t{}", next++);
    for (size_t i = 0; i < outputs.size(); ++i) names[outputs[i]] = p.value(p.outputs[i]).name;
    // A program output name may collide with a "tN" name only if the user named it so.
    GraphBuilder kb(Level::kernel, p.name);
    std::vector<ValueId> ids(vals_.size(), -1);
    for (size_t i = 0; i < p.inputs.size(); ++i)
      ids[i] = kb.add_input(names[i], p.type(p.inputs[i]));
    for (const KOp& op : ops_) {
      std::vector<ValueId> in;
      for (int v : op.inputs) in.push_back(ids[v]);
      if (op.kind == OpKind::kernel) {
        std::vector<std::string> out_names;
        for (int o : op.outputs) out_names.push_back(names[o]);
        std::vector<TensorType> operand_types;
        std::vector<std::string> operand_names;
        for (int v : op.inputs) {
          operand_types.push_back(to_tensor_type(vals_[v].type));
          operand_names.push_back(names[v]);
        }
        Graph body = materialize_block(*op.sketch, operand_types, operand_names, out_names,
                                       ctx_.constants, ctx_.config.threads_per_block.front());
        auto res = kb.add_nested(OpKind::kernel, in, std::move(body), out_names);
        for (size_t i = 0; i < res.size(); ++i) ids[op.outputs[i]] = res[i];
      } else {
        ids[op.outputs[0]] = kb.add(op.kind, in, attrs_of(op.kind, op.dim, op.constant, op.to),
                                    names[op.outputs[0]]);
      }
    }
    for (int o : outputs) kb.add_output(ids[o]);
    return std::move(kb).finish();
  }

  Attrs attrs_of(OpKind kind, int dim, int constant, int64_t to = 1) const {
    return sketch_op_attrs(kind, dim, constant, to, ctx_.constants);
  }

  const KernelSearchContext& ctx_;
  const std::function<void(Graph&&)>& emit_;
  // Block searches deepen like the kernel levels: block graphs of at most 3 operators for every
  // operand set first, then 6, ... then max_block_ops. One block search of one schedule at 11
  // operators can take tens of seconds (an intermediate one finds thousands of signatures, most
  // never useful; a final one runs for each of ~20,000 schedules of two operands), while many
  // kernels of a good µGraph are small: a sum of squares, a statistic applied to a tile. Block
  // graphs a smaller tier found are not built on again. One configuration per tier.
  std::vector<SearchConfig> block_tiers_;
  size_t tier_reached_ = 0;   // the largest tier this level has searched (reach_tier)
  MemoryAccount own_memory_;  // when the context brings none
  MemoryAccount* memory_;
  int64_t oracle_bytes_ = 0;  // the oracle's share of the account
  int64_t visits_ = 0;
  std::vector<KVal> vals_;
  std::vector<KOp> ops_;
  std::vector<SType> output_types_;
  int n_graph_defined_ = 0;
  int depth_ = 1;
};

}  // namespace

void search_kernel_graphs(const KernelSearchContext& ctx,
                          const std::function<void(Graph&&)>& emit) {
  KernelSearcher s(ctx, emit);
  s.run();
}

}  // namespace weft
