// Task graph to Graphviz dot, one cluster per operator so kernels read as columns of blocks.
#include "mpk/tgraph_dot.h"

#include <fmt/format.h>

namespace weft {

std::string tgraph_to_dot(const TaskGraph& g) {
  static const char* colours[] = {"#a6cee3", "#b2df8a", "#fb9a99", "#fdbf6f", "#cab2d6", "#ffff99"};
  std::string s = fmt::format("digraph \"{}\" {{\n  rankdir=LR;\n  node [fontsize=10];\n", g.name);
  for (size_t o = 0; o < g.ops.size(); ++o) {
    s += fmt::format("  subgraph cluster_o{} {{\n    label=\"o{} {}{}\";\n", o, o, g.ops[o].kernel,
                     g.ops[o].data_dependent ? " (data-dependent)" : "");
    for (size_t t = 0; t < g.tasks.size(); ++t)
      if (g.tasks[t].op == static_cast<int>(o))
        s += fmt::format(
            "    t{} [shape=box, style=filled, fillcolor=\"{}\", label=\"t{} [{},{},{}]{}\"];\n", t,
            colours[o % 6], t, g.tasks[t].bid[0], g.tasks[t].bid[1], g.tasks[t].bid[2],
            g.tasks[t].jit ? " jit" : "");
    s += "  }\n";
  }
  for (size_t t = 0; t < g.tasks.size(); ++t)
    if (g.tasks[t].op == kEmptyTask) s += fmt::format("  t{} [shape=point, width=0.1];\n", t);
  for (size_t e = 0; e < g.events.size(); ++e)
    s += fmt::format("  e{} [shape=diamond, label=\"e{} {} {}\"];\n", e, e,
                     event_kind_name(g.events[e].kind), g.events[e].need);
  for (size_t t = 0; t < g.tasks.size(); ++t) {
    for (int e : g.tasks[t].waits) s += fmt::format("  e{} -> t{};\n", e, t);
    for (int e : g.tasks[t].triggers) s += fmt::format("  t{} -> e{};\n", t, e);
  }
  return s + "}\n";
}

}  // namespace weft
