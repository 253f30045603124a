// Event fusion over maps from a launch (or trigger) set to the surviving event.
#include "mpk/passes/fuse_events.h"

#include <algorithm>
#include <map>

#include "core/error.h"

namespace weft {

namespace {

void sort_unique(std::vector<int>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

// One merge round keyed by each event's launch set (by_launches) or trigger set; returns whether
// any two events merged.
bool merge_round(TaskGraph& g, bool by_launches) {
  EventSides sides = event_sides(g);
  std::map<std::vector<int>, int> survivor;
  std::vector<int> remap(g.events.size());
  std::vector<Event> events;
  bool merged = false;
  for (size_t e = 0; e < g.events.size(); ++e) {
    if (g.events[e].kind != EventKind::normal) {
      WEFT_CHECK(e == events.size(), "begin and end must be events 0 and 1");
      remap[e] = static_cast<int>(events.size());
      events.push_back(g.events[e]);
      continue;
    }
    const auto& key = by_launches ? sides.launches[e] : sides.triggers[e];
    auto [it, inserted] = survivor.emplace(key, static_cast<int>(events.size()));
    if (inserted) events.push_back(g.events[e]);
    merged |= !inserted;
    remap[e] = it->second;
  }
  if (!merged) return false;
  for (Task& t : g.tasks) {
    for (int& e : t.waits) e = remap[e];
    for (int& e : t.triggers) e = remap[e];
    sort_unique(t.waits);
    sort_unique(t.triggers);
  }
  g.events = std::move(events);
  for (Event& e : g.events)
    if (e.kind != EventKind::begin) e.need = 0;
  for (const Task& t : g.tasks)
    for (int e : t.triggers) ++g.events[e].need;
  return true;
}

}  // namespace

TaskGraph fuse_events(const TaskGraph& graph) {
  TaskGraph g = graph;
  bool changed = true;
  while (changed) {
    changed = merge_round(g, true);
    changed = merge_round(g, false) || changed;
  }
  return g;
}

}  // namespace weft
