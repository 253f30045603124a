// Verifier: structural checks, byte-level conflicts against ancestor sets, abstract execution.
#include "mpk/verify_tgraph.h"

#include <fmt/format.h>

#include <deque>

#include "mpk/memory_runs.h"

namespace weft {

namespace {

using Runs = std::vector<std::pair<int64_t, int64_t>>;

struct Footprint {
  int64_t storage;
  int tensor;
  const Box* box;
  std::optional<Runs> runs;  // nullopt above the run cap: compare boxes (same tensor) or spans
};

bool conflict(const TaskGraph& g, const Footprint& a, const Footprint& b) {
  if (a.storage != b.storage) return false;
  if (a.runs && b.runs) return runs_intersect(*a.runs, *b.runs);
  if (a.tensor == b.tensor) return boxes_intersect(*a.box, *b.box);
  auto sa = byte_span(g.tensors[a.tensor], *a.box), sb = byte_span(g.tensors[b.tensor], *b.box);
  return std::max(sa.first, sb.first) < std::min(sa.second, sb.second);
}

void check_structure(const TaskGraph& g, std::vector<std::string>& out) {
  const int n = static_cast<int>(g.tasks.size()), ne = static_cast<int>(g.events.size());
  if (ne < 2 || g.events[0].kind != EventKind::begin || g.events[0].need != 1 ||
      g.events[1].kind != EventKind::end || g.events[1].first >= 0)
    out.push_back("events 0 and 1 must be begin (need 1) and end (launching nothing)");
  std::vector<int64_t> triggers(ne, 0);
  for (int t = 0; t < n; ++t) {
    const Task& task = g.tasks[t];
    if (task.waits.size() != 1 || task.triggers.size() != 1) {
      out.push_back(fmt::format("t{}: not in normal form ({} events waited for, {} triggered)", t,
                                task.waits.size(), task.triggers.size()));
      continue;
    }
    if (task.waits[0] < 0 || task.waits[0] >= ne || task.triggers[0] < 0 ||
        task.triggers[0] >= ne) {
      out.push_back(fmt::format("t{}: event out of range", t));
      continue;
    }
    ++triggers[task.triggers[0]];
    const Event& e = g.events[task.waits[0]];
    if (t < e.first || t > e.last)
      out.push_back(
          fmt::format("t{}: waits for e{} but is outside its launch range", t, task.waits[0]));
  }
  for (int e = 0; e < ne; ++e) {
    const Event& ev = g.events[e];
    if (ev.kind == EventKind::begin ? triggers[e] != 0 : triggers[e] != ev.need)
      out.push_back(fmt::format("e{}: need {} but {} tasks trigger it", e, ev.need, triggers[e]));
    if (ev.first >= 0) {
      if (ev.last < ev.first || ev.last >= n) {
        out.push_back(fmt::format("e{}: launch range t{}..t{} out of range", e, ev.first, ev.last));
        continue;
      }
      for (int t = ev.first; t <= ev.last; ++t)
        if (g.tasks[t].waits.size() != 1 || g.tasks[t].waits[0] != e)
          out.push_back(
              fmt::format("e{}: t{} is in its launch range but does not wait for it", e, t));
    }
  }
}

// Ancestor bit sets in linear order; false (with a problem) when some task comes before a task
// its event waits for.
bool ancestors(const TaskGraph& g, std::vector<std::vector<uint64_t>>& anc,
               std::vector<std::string>& out) {
  const size_t n = g.tasks.size(), words = (n + 63) / 64;
  std::vector<std::vector<int>> triggers_of(g.events.size());
  for (size_t t = 0; t < n; ++t) triggers_of[g.tasks[t].triggers[0]].push_back(static_cast<int>(t));
  anc.assign(n, std::vector<uint64_t>(words, 0));
  bool ok = true;
  for (size_t v = 0; v < n; ++v)
    for (int p : triggers_of[g.tasks[v].waits[0]]) {
      if (p >= static_cast<int>(v)) {
        out.push_back(
            fmt::format("t{}: placed before t{}, which triggers the event it waits for", v, p));
        ok = false;
        continue;
      }
      anc[v][p / 64] |= uint64_t{1} << (p % 64);
      for (size_t w = 0; w < words; ++w) anc[v][w] |= anc[p][w];
    }
  return ok;
}

void check_conflicts(const TaskGraph& g, const std::vector<std::vector<uint64_t>>& anc,
                     std::vector<std::string>& out) {
  constexpr int64_t kMaxRuns = int64_t{1} << 20;
  const size_t n = g.tasks.size();
  std::vector<std::vector<Footprint>> reads(n), writes(n);
  for (size_t t = 0; t < n; ++t) {
    for (auto [list, into] :
         {std::pair{&g.tasks[t].reads, &reads[t]}, std::pair{&g.tasks[t].writes, &writes[t]}})
      for (const Access& a : *list) {
        const TgTensor& tt = g.tensors[a.tensor];
        into->push_back(
            Footprint{storage_of(tt), a.tensor, &a.box, byte_runs(tt, a.box, kMaxRuns)});
      }
  }
  auto any = [&](const std::vector<Footprint>& x, const std::vector<Footprint>& y) {
    for (const Footprint& a : x)
      for (const Footprint& b : y)
        if (conflict(g, a, b)) return true;
    return false;
  };
  for (size_t v = 0; v < n; ++v)
    for (size_t u = 0; u < v; ++u) {
      if (g.tasks[u].op == g.tasks[v].op) continue;  // blocks of one kernel (or empty tasks)
      if ((anc[v][u / 64] >> (u % 64)) & 1) continue;
      if (any(writes[u], reads[v]) || any(reads[u], writes[v]) || any(writes[u], writes[v]))
        out.push_back(fmt::format(
            "t{} and t{} touch common bytes, one writing, but no path of events orders them", u,
            v));
    }
}

void check_assignment(const TaskGraph& g, std::vector<std::string>& out) {
  const size_t n = g.tasks.size();
  if (g.workers < 1 || g.worker_lists.size() != static_cast<size_t>(g.workers)) {
    out.push_back(fmt::format("workers={} with {} worker lists", g.workers, g.worker_lists.size()));
    return;
  }
  std::vector<int> seen(n, 0);
  for (size_t w = 0; w < g.worker_lists.size(); ++w) {
    const auto& list = g.worker_lists[w];
    for (size_t i = 0; i < list.size(); ++i) {
      if (list[i] < 0 || list[i] >= static_cast<int>(n)) {
        out.push_back(fmt::format("w{}: task {} out of range", w, list[i]));
        return;
      }
      ++seen[list[i]];
      if (i > 0 && list[i] <= list[i - 1])
        out.push_back(fmt::format("w{}: t{} listed after t{} (lists must increase in linear order)",
                                  w, list[i], list[i - 1]));
    }
  }
  for (size_t t = 0; t < n; ++t) {
    if (g.tasks[t].jit && seen[t] != 0)
      out.push_back(fmt::format("t{}: a JIT task in a worker list", t));
    if (!g.tasks[t].jit && seen[t] != 1)
      out.push_back(fmt::format("t{}: an AOT task in {} worker lists (must be 1)", t, seen[t]));
  }
}

// One iteration with every worker resident: a worker runs its list head once the head's event has
// fired; JIT tasks run once theirs has. Stops when nothing can move.
void check_execution(const TaskGraph& g, std::vector<std::string>& out) {
  const size_t n = g.tasks.size();
  std::vector<int64_t> count(g.events.size(), 0);
  count[kBeginEvent] = 1;
  std::vector<size_t> head(g.worker_lists.size(), 0);
  std::vector<bool> done(n, false);
  auto fired = [&](int e) { return count[e] >= g.events[e].need; };
  size_t ran = 0;
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t w = 0; w < head.size(); ++w) {
      while (head[w] < g.worker_lists[w].size()) {
        int t = g.worker_lists[w][head[w]];
        if (done[t] || !fired(g.tasks[t].waits[0])) break;
        done[t] = true;
        ++count[g.tasks[t].triggers[0]];
        ++head[w];
        ++ran;
        progress = true;
      }
    }
    for (size_t t = 0; t < n; ++t)
      if (g.tasks[t].jit && !done[t] && fired(g.tasks[t].waits[0])) {
        done[t] = true;
        ++count[g.tasks[t].triggers[0]];
        ++ran;
        progress = true;
      }
  }
  if (ran != n || !fired(kEndEvent)) {
    std::string stuck;
    for (size_t w = 0; w < head.size(); ++w)
      if (head[w] < g.worker_lists[w].size()) {
        int t = g.worker_lists[w][head[w]];
        int e = g.tasks[t].waits[0];
        stuck += fmt::format(" w{} at t{} (e{} {}/{})", w, t, e, count[e], g.events[e].need);
      }
    out.push_back(fmt::format("abstract execution stops after {} of {} tasks:{}", ran, n, stuck));
  }
}

}  // namespace

std::vector<std::string> verify_task_graph(const TaskGraph& g) {
  std::vector<std::string> out;
  check_structure(g, out);
  if (!out.empty()) return out;  // the later checks index through the events
  std::vector<std::vector<uint64_t>> anc;
  if (ancestors(g, anc, out)) check_conflicts(g, anc, out);
  check_assignment(g, out);
  if (out.empty()) check_execution(g, out);
  return out;
}

}  // namespace weft
