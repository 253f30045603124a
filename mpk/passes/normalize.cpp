// Normalization with empty tasks, grouped by equal event sets so that a fan-in or fan-out shared
// by a whole operator costs one set of empty tasks, not one per task.
#include "mpk/passes/normalize.h"

#include <map>

#include "core/error.h"

namespace weft {

TaskGraph normalize_events(const TaskGraph& graph, int64_t* added) {
  TaskGraph g = graph;
  const size_t original = g.tasks.size();
  std::map<std::vector<int>, int> join_of, fork_of;  // event set -> its new event
  auto new_event = [&] {
    g.events.push_back(Event{EventKind::normal, 0});
    return static_cast<int>(g.events.size()) - 1;
  };
  auto empty_task = [&](int wait, int trigger) {
    Task t;
    t.waits = {wait};
    t.triggers = {trigger};
    g.tasks.push_back(std::move(t));
  };
  for (size_t i = 0; i < original; ++i) {
    WEFT_CHECK(!g.tasks[i].waits.empty() && !g.tasks[i].triggers.empty(),
               "task {} has no event to wait for or to trigger (run dependency analysis first)", i);
    if (g.tasks[i].waits.size() > 1) {
      std::vector<int> set = g.tasks[i].waits;
      auto [it, fresh] = join_of.emplace(set, 0);
      if (fresh) {
        it->second = new_event();
        for (int e : set) empty_task(e, it->second);
      }
      g.tasks[i].waits = {it->second};
    }
    if (g.tasks[i].triggers.size() > 1) {
      std::vector<int> set = g.tasks[i].triggers;
      auto [it, fresh] = fork_of.emplace(set, 0);
      if (fresh) {
        it->second = new_event();
        for (int e : set) empty_task(it->second, e);
      }
      g.tasks[i].triggers = {it->second};
    }
  }
  for (Event& e : g.events)
    if (e.kind != EventKind::begin) e.need = 0;
  for (const Task& t : g.tasks)
    for (int e : t.triggers) ++g.events[e].need;
  if (added) *added = static_cast<int64_t>(g.tasks.size() - original);
  return g;
}

}  // namespace weft
