// Exhaustive layout selection under the documented cost table.
#include "lower/select_layouts.h"

#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <set>

#include "core/error.h"

namespace weft {

namespace {

constexpr int64_t kInfeasible = std::numeric_limits<int64_t>::max() / 4;

// A cost term over one or two shared buffers (-1: a device tensor or register value).
struct Term {
  int a = -1, b = -1;
  std::function<int64_t(const PlanBuffer*, const PlanBuffer*)> cost;
};

int last(const PlanBuffer& b) {
  return static_cast<int>(b.shape.size()) - 1;
}

std::vector<Term> cost_terms(const KernelPlan& k, const Target& target) {
  std::map<std::string, int> index;
  for (size_t i = 0; i < k.buffers.size(); ++i)
    if (k.buffers[i].space == MemSpace::shared) index[k.buffers[i].name] = static_cast<int>(i);
  auto id = [&](const std::string& n) {
    auto it = index.find(n);
    return it == index.end() ? -1 : it->second;
  };
  bool gpu = target.kind == TargetKind::gpu;
  std::vector<Term> terms;
  auto unary = [&](int a, auto f) {
    if (a >= 0)
      terms.push_back(Term{a, -1, [f](const PlanBuffer* x, const PlanBuffer*) { return f(*x); }});
  };
  auto mismatch = [&](int a, int b) {
    if (a < 0 || b < 0) return;
    terms.push_back(Term{a, b, [](const PlanBuffer* x, const PlanBuffer* y) -> int64_t {
                           if (x->shape.size() != y->shape.size()) return 0;
                           return x->contiguous_dim == y->contiguous_dim
                                      ? 0
                                      : std::max(numel(x->shape), numel(y->shape));
                         }});
  };
  std::function<void(const Step&)> visit = [&](const Step& s) {
    switch (s.kind) {
      case StepKind::load:
      case StepKind::store: {
        int b = id(s.kind == StepKind::load ? s.outputs[0] : s.inputs[0]);
        unary(b, [](const PlanBuffer& x) -> int64_t {
          return x.contiguous_dim == last(x) ? 0 : 4 * numel(x.shape);
        });
        break;
      }
      case StepKind::thread:
        for (const std::string& in : s.inputs)
          for (const std::string& out : s.outputs) mismatch(id(in), id(out));
        break;
      case StepKind::compute:
      case StepKind::accum:
        if (s.op == OpKind::matmul) {
          for (int role = 0; role < 3; ++role) {
            int b = id(role == 2 ? s.outputs[0] : s.inputs[role]);
            unary(b, [role, gpu](const PlanBuffer& x) -> int64_t {
              int r = last(x);
              if (x.contiguous_dim < r - 1) return kInfeasible;
              int64_t c = 0;
              // A's inner product walks k, B's and C's rows walk n: both the last dim.
              if (x.contiguous_dim != r) c += numel(x.shape);
              if (gpu && role < 2 && x.swizzle == 0 && swizzle_removes_bank_conflicts(x))
                c += 2 * numel(x.shape);
              return c;
            });
          }
        } else if (s.op == OpKind::reshape) {
          for (int b : {id(s.inputs[0]), id(s.outputs[0])})
            unary(b, [](const PlanBuffer& x) -> int64_t {
              return x.contiguous_dim == last(x) ? 0 : kInfeasible;
            });
        } else {
          for (const std::string& in : s.inputs)
            for (const std::string& out : s.outputs) mismatch(id(in), id(out));
        }
        break;
      case StepKind::barrier:
      case StepKind::call:
        break;
    }
  };
  for (const Step& s : k.loop_steps) visit(s);
  for (const Step& s : k.post_steps) visit(s);
  return terms;
}

int64_t total(const std::vector<Term>& terms, const std::vector<PlanBuffer>& bufs) {
  int64_t c = 0;
  for (const Term& t : terms) {
    c += t.cost(&bufs[t.a], t.b >= 0 ? &bufs[t.b] : nullptr);
    if (c >= kInfeasible) return kInfeasible;
  }
  return c;
}

// Layout options of one buffer, the preferred (row-major, unswizzled) first.
std::vector<std::pair<int, int>> options(const PlanBuffer& b, bool gpu) {
  std::vector<std::pair<int, int>> o;
  for (int c = last(b); c >= 0; --c)
    for (int sw = 0; sw <= (gpu && b.shape.size() >= 2 ? 1 : 0); ++sw) o.emplace_back(c, sw);
  return o;
}

}  // namespace

bool swizzle_removes_bank_conflicts(const PlanBuffer& b) {
  const int64_t row = b.row_bytes();
  return row % 128 == 0 || ((row == 32 || row == 64) && b.bytes() % 128 == 0);
}

int64_t layout_cost(const KernelPlan& kernel, const Target& target) {
  return total(cost_terms(kernel, target), kernel.buffers);
}

ProgramPlan select_layouts(const ProgramPlan& plan, const Target& target) {
  ProgramPlan p = plan;
  bool gpu = target.kind == TargetKind::gpu;
  for (KernelPlan& k : p.kernels) {
    if (k.library) continue;
    std::vector<Term> terms = cost_terms(k, target);
    size_t n = k.buffers.size();
    // Connected groups of buffers linked by two-buffer terms are solved independently.
    std::vector<size_t> parent(n);
    std::iota(parent.begin(), parent.end(), 0);
    auto find = [&](size_t i) {
      while (parent[i] != i) i = parent[i] = parent[parent[i]];
      return i;
    };
    for (const Term& t : terms)
      if (t.b >= 0) parent[find(t.a)] = find(t.b);
    std::map<size_t, std::vector<int>> groups;
    for (size_t i = 0; i < n; ++i)
      if (k.buffers[i].space == MemSpace::shared) groups[find(i)].push_back(static_cast<int>(i));
    for (auto& [root, members] : groups) {
      std::set<int> in_group(members.begin(), members.end());
      std::vector<Term> local;
      for (const Term& t : terms)
        if (in_group.count(t.a)) local.push_back(t);
      std::vector<std::vector<std::pair<int, int>>> opts;
      double combos = 1;
      for (int m : members) {
        opts.push_back(options(k.buffers[m], gpu));
        combos *= static_cast<double>(opts.back().size());
      }
      std::vector<PlanBuffer> bufs = k.buffers;
      if (combos > double(1 << 20)) {
        // Too many to enumerate: row-major, each buffer's swizzle chosen alone.
        for (int m : members) {
          int64_t best = kInfeasible;
          int best_sw = 0;
          for (int sw = 0; sw <= (gpu ? 1 : 0); ++sw) {
            bufs[m].contiguous_dim = last(bufs[m]);
            bufs[m].swizzle = sw;
            int64_t c = total(local, bufs);
            if (c < best) best = c, best_sw = sw;
          }
          bufs[m].swizzle = best_sw;
        }
      } else {
        std::vector<size_t> choice(members.size(), 0), best_choice = choice;
        int64_t best = kInfeasible + 1;
        while (true) {
          for (size_t j = 0; j < members.size(); ++j) {
            bufs[members[j]].contiguous_dim = opts[j][choice[j]].first;
            bufs[members[j]].swizzle = opts[j][choice[j]].second;
          }
          int64_t c = total(local, bufs);
          if (c < best) best = c, best_choice = choice;
          size_t j = 0;
          while (j < choice.size() && ++choice[j] == opts[j].size()) choice[j++] = 0;
          if (j == choice.size()) break;
        }
        WEFT_CHECK(best < kInfeasible, "no feasible layout for kernel {}", k.name);
        for (size_t j = 0; j < members.size(); ++j) {
          bufs[members[j]].contiguous_dim = opts[j][best_choice[j]].first;
          bufs[members[j]].swizzle = opts[j][best_choice[j]].second;
        }
      }
      for (int m : members) k.buffers[m] = bufs[m];
    }
  }
  return p;
}

}  // namespace weft
