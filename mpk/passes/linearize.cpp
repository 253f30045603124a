// Linearization: a FIFO of ready events; a task's placement counts towards its trigger event.
#include "mpk/passes/linearize.h"

#include <deque>

#include "core/error.h"

namespace weft {

TaskGraph linearize_tasks(const TaskGraph& graph) {
  TaskGraph g = graph;
  const size_t n = g.tasks.size();
  for (size_t t = 0; t < n; ++t)
    WEFT_CHECK(g.tasks[t].waits.size() == 1 && g.tasks[t].triggers.size() == 1,
               "linearization needs normal form; task {} waits for {} and triggers {} events", t,
               g.tasks[t].waits.size(), g.tasks[t].triggers.size());
  EventSides sides = event_sides(g);
  std::vector<int64_t> placed_triggers(g.events.size(), 0);
  std::vector<int> order;  // old task ids in their new order
  std::deque<int> ready;
  for (size_t e = 0; e < g.events.size(); ++e)
    if (sides.triggers[e].empty()) ready.push_back(static_cast<int>(e));
  for (Event& e : g.events) e.first = e.last = -1;
  while (!ready.empty()) {
    const int e = ready.front();
    ready.pop_front();
    if (!sides.launches[e].empty()) {
      g.events[e].first = static_cast<int>(order.size());
      g.events[e].last = static_cast<int>(order.size() + sides.launches[e].size()) - 1;
    }
    for (int t : sides.launches[e]) {
      order.push_back(t);
      const int trig = g.tasks[t].triggers[0];
      if (++placed_triggers[trig] == static_cast<int64_t>(sides.triggers[trig].size()))
        ready.push_back(trig);
    }
  }
  WEFT_CHECK(order.size() == n, "linearization placed {} of {} tasks: the graph has a cycle",
             order.size(), n);
  std::vector<int> new_id(n);
  for (size_t i = 0; i < n; ++i) new_id[order[i]] = static_cast<int>(i);
  std::vector<Task> tasks(n);
  for (size_t i = 0; i < n; ++i) tasks[i] = std::move(g.tasks[order[i]]);
  g.tasks = std::move(tasks);
  for (auto& list : g.worker_lists)
    for (int& t : list) t = new_id[t];
  return g;
}

}  // namespace weft
