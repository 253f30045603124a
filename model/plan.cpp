// Memory planning: alias-aware liveness, greedy storage reuse by provable size, static offsets
// from upper bounds, and the plan's text form.
#include "model/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "sym/interval.h"

namespace weft {

const FunctionPlan* ModulePlan::find(std::string_view function) const {
  for (const FunctionPlan& f : functions)
    if (f.function == function) return &f;
  return nullptr;
}

bool is_view(const Call& call) {
  return call.kind == CallKind::op && call.callee == op_info(OpKind::reshape).name;
}

namespace {

// Calls that produce new tensors in the calling frame (a function call's results are the
// callee's outputs, an if's are its arm's, allocated on their own; tuple, item, match_cast and
// reshape alias their operands).
bool allocates(const Call& call) {
  if (is_view(call)) return false;
  switch (call.kind) {
    case CallKind::op:
    case CallKind::ugraph:
    case CallKind::lib:
      return true;
    case CallKind::func:
    case CallKind::if_:
    case CallKind::tuple:
    case CallKind::item:
    case CallKind::match_cast:
      return false;
  }
  return false;
}

void tensor_leaves(const MType& t, std::vector<int>& path,
                   std::vector<std::pair<std::vector<int>, const MType*>>& out) {
  if (t.kind == MTypeKind::tuple) {
    for (size_t i = 0; i < t.fields.size(); ++i) {
      path.push_back(static_cast<int>(i));
      tensor_leaves(t.fields[i], path, out);
      path.pop_back();
    }
  } else if (t.kind == MTypeKind::tensor) {
    out.emplace_back(path, &t);
  }
}

int64_t align_up(int64_t v, int64_t a) {
  return (v + a - 1) / a * a;
}

// The storage to reuse for `need` among the free ones: provably large enough, preferring a
// provably equal size, then the smallest upper bound, then the lowest index.
int pick_storage(SymProver& prover, const std::vector<PlannedStorage>& storages,
                 const std::set<int>& free, const SymExpr& need) {
  int best = -1;
  std::tuple<bool, int64_t, int> best_key{};
  for (int s : free) {
    const SymExpr& have = storages[static_cast<size_t>(s)].bytes;
    if (prover.prove_le(need, have).truth != SymTruth::proven_true) continue;
    bool equal = prover.prove_eq(need, have).truth == SymTruth::proven_true;
    auto upper = storages[static_cast<size_t>(s)].upper;
    std::tuple<bool, int64_t, int> key{!equal, upper.value_or(INT64_MAX), s};
    if (best < 0 || key < best_key) {
      best = s;
      best_key = key;
    }
  }
  return best;
}

// First-fit offsets for storages whose lifetimes overlap, largest first.
int64_t pack_offsets(std::vector<PlannedStorage>& storages, int64_t alignment) {
  std::vector<int> order(storages.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  auto size_of = [&](int s) {
    return align_up(*storages[static_cast<size_t>(s)].upper, alignment);
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return size_of(a) > size_of(b); });
  std::vector<int> placed;
  int64_t arena = 0;
  for (int s : order) {
    PlannedStorage& st = storages[static_cast<size_t>(s)];
    std::vector<std::pair<int64_t, int64_t>> busy;  // [offset, end) of overlapping lifetimes
    for (int p : placed) {
      const PlannedStorage& o = storages[static_cast<size_t>(p)];
      if (o.first <= st.last && st.first <= o.last)
        busy.emplace_back(o.offset, o.offset + size_of(p));
    }
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (const auto& [lo, hi] : busy) {
      if (offset + size_of(s) <= lo) break;
      offset = std::max(offset, hi);
    }
    st.offset = offset;
    arena = std::max(arena, offset + size_of(s));
    placed.push_back(s);
  }
  return arena;
}

FunctionPlan plan_function(const Function& fn, SymProver& prover, const PlanOptions& options) {
  FunctionPlan plan;
  plan.function = fn.name;
  std::vector<const Binding*> bindings;
  for (const Block& b : fn.blocks)
    for (const Binding& x : b.bindings) bindings.push_back(&x);
  const int end = static_cast<int>(bindings.size());  // the return

  // The allocations each value may reference (tuples and casts alias their operands).
  std::map<std::string, std::set<int>> refs;
  std::map<std::string, int> last_read;  // value -> last binding reading it (end: the result)
  for (int i = 0; i < end; ++i) {
    const Binding& b = *bindings[static_cast<size_t>(i)];
    for (const std::string& a : reads_of(b.call)) last_read[a] = i;
    std::set<int>& mine = refs[b.var];
    if (allocates(b.call)) {
      std::vector<std::pair<std::vector<int>, const MType*>> leaves;
      std::vector<int> path;
      tensor_leaves(b.type, path, leaves);
      for (auto& [p, t] : leaves) {
        PlannedAlloc a;
        a.binding = i;
        a.var = b.var;
        a.path = p;
        a.last_use = i;
        if (!t->dims) {
          a.placement = AllocPlacement::dynamic;
          a.bytes = 0;
        } else {
          SymExpr bytes = options.element_bytes > 0 ? options.element_bytes : dtype_bytes(t->dtype);
          for (const SymExpr& d : *t->dims) bytes = bytes * d;
          a.bytes = bytes;
        }
        mine.insert(static_cast<int>(plan.allocs.size()));
        plan.allocs.push_back(std::move(a));
      }
    } else if (b.call.kind != CallKind::func && b.call.kind != CallKind::if_) {
      // A function's and an if's results are owned (the VM copies out any slot they yield).
      for (const std::string& a : b.call.args)
        if (auto it = refs.find(a); it != refs.end())
          mine.insert(it->second.begin(), it->second.end());
    }
  }
  last_read[fn.result] = end;
  for (const auto& [value, allocs] : refs) {
    auto it = last_read.find(value);
    if (it == last_read.end()) continue;  // never read: its allocations die where defined
    for (int a : allocs) {
      PlannedAlloc& pa = plan.allocs[static_cast<size_t>(a)];
      pa.last_use = std::max(pa.last_use, it->second);
      if (it->second == end && pa.placement == AllocPlacement::storage)
        pa.placement = AllocPlacement::output;
    }
  }

  // Greedy reuse in program order; a storage whose tensors are all dead before binding i is
  // free at i (an operator never writes over its own operands).
  std::set<int> free;
  plan.naive_bytes = 0;
  plan.output_bytes = 0;
  for (PlannedAlloc& a : plan.allocs) {
    for (size_t s = 0; s < plan.storages.size(); ++s)
      if (plan.storages[s].last < a.binding) free.insert(static_cast<int>(s));
    if (a.placement == AllocPlacement::output) plan.output_bytes = plan.output_bytes + a.bytes;
    if (a.placement != AllocPlacement::storage) continue;
    plan.naive_bytes = plan.naive_bytes + a.bytes;
    int s = pick_storage(prover, plan.storages, free, a.bytes);
    if (s < 0) {
      PlannedStorage st;
      st.bytes = a.bytes;
      st.upper = upper_bound(a.bytes);
      st.first = a.binding;
      s = static_cast<int>(plan.storages.size());
      plan.storages.push_back(std::move(st));
    }
    free.erase(s);
    PlannedStorage& st = plan.storages[static_cast<size_t>(s)];
    st.last = std::max(st.last, a.last_use);
    a.storage = s;
  }
  plan.planned_bytes = 0;
  for (const PlannedStorage& st : plan.storages) plan.planned_bytes = plan.planned_bytes + st.bytes;
  plan.is_static = std::all_of(plan.storages.begin(), plan.storages.end(),
                               [](const PlannedStorage& s) { return s.upper.has_value(); });
  if (plan.is_static) plan.arena_bytes = pack_offsets(plan.storages, options.alignment);
  return plan;
}

std::string eval_str(const SymExpr& e, const std::optional<SymBinding>& binding) {
  if (!binding) return e.str();
  SymEvalResult r = try_evaluate(e, *binding);
  return r.value ? fmt::format("{}", *r.value) : e.str();
}

std::string leaf_name(const PlannedAlloc& a) {
  std::string s = a.var;
  for (int p : a.path) s += fmt::format(".{}", p);
  return s;
}

}  // namespace

ModulePlan plan_memory(const Module& module, SymProver& prover, const PlanOptions& options) {
  WEFT_CHECK(options.alignment > 0, "plan alignment must be positive");
  ModulePlan plan;
  plan.element_bytes = options.element_bytes;
  for (const Function& f : module.functions)
    plan.functions.push_back(plan_function(f, prover, options));
  return plan;
}

int64_t live_peak_bytes(const FunctionPlan& plan, const SymBinding& binding) {
  int last = 0;
  for (const PlannedAlloc& a : plan.allocs) last = std::max(last, a.last_use);
  int64_t peak = 0;
  for (int i = 0; i <= last; ++i) {
    int64_t live = 0;
    for (const PlannedAlloc& a : plan.allocs)
      if (a.placement == AllocPlacement::storage && a.binding <= i && i <= a.last_use)
        live += evaluate(a.bytes, binding);
    peak = std::max(peak, live);
  }
  return peak;
}

std::string plan_str(const ModulePlan& plan, const Module& module,
                     const std::optional<SymBinding>& binding) {
  std::string out;
  if (binding) out += fmt::format("# at {}\n", binding_str(*binding));
  out += plan.element_bytes > 0 ? fmt::format("# {} bytes per element\n", plan.element_bytes)
                                : "# bytes per element: the declared dtype's\n";
  for (const FunctionPlan& f : plan.functions) {
    const Function* fn = module.find_function(f.function);
    WEFT_CHECK(fn, "plan of unknown function {}", f.function);
    out += fmt::format("fn {}: {} storage{}, {}\n", f.function, f.storages.size(),
                       f.storages.size() == 1 ? "" : "s",
                       f.is_static ? fmt::format("static arena of {} bytes", f.arena_bytes)
                                   : std::string("symbolic (sized at run time)"));
    for (size_t s = 0; s < f.storages.size(); ++s) {
      const PlannedStorage& st = f.storages[s];
      out += fmt::format("  s{}: {} bytes", s, eval_str(st.bytes, binding));
      if (st.upper) out += fmt::format(" <= {}", *st.upper);
      if (f.is_static) out += fmt::format(" at {}", st.offset);
      out += fmt::format(", bindings {}..{}\n", st.first, st.last);
    }
    for (const PlannedAlloc& a : f.allocs) {
      std::string where;
      switch (a.placement) {
        case AllocPlacement::storage:
          where = fmt::format("s{}", a.storage);
          break;
        case AllocPlacement::output:
          where = "output";
          break;
        case AllocPlacement::dynamic:
          where = "dynamic";
          break;
      }
      out += fmt::format(
          "  {} -> {} ({} bytes, live {}..{})\n", leaf_name(a), where,
          a.placement == AllocPlacement::dynamic ? std::string("?") : eval_str(a.bytes, binding),
          a.binding, a.last_use);
    }
    out += fmt::format("  naive {} bytes, planned {} bytes", eval_str(f.naive_bytes, binding),
                       eval_str(f.planned_bytes, binding));
    if (binding) {
      bool evaluable = true;
      for (const PlannedAlloc& a : f.allocs)
        if (a.placement == AllocPlacement::storage && !try_evaluate(a.bytes, *binding).value)
          evaluable = false;
      if (evaluable) out += fmt::format(", live peak {} bytes", live_peak_bytes(f, *binding));
    }
    out += fmt::format(", outputs {} bytes\n", eval_str(f.output_bytes, binding));
  }
  return out;
}

}  // namespace weft
