// `weft absexpr FILE [--viable TERM] [--output NAME] [--axioms]`: abstract expressions of a µGraph
// and the pruning oracle's answer for a term, for debugging the search.
#include <iostream>

#include "absexpr/axioms.h"
#include "absexpr/of_graph.h"
#include "absexpr/oracle.h"
#include "tools/weft/command.h"

static weft::cli::Register reg(
    "absexpr", "Print the abstract expression of each output; ask the pruning oracle about a term",
    [](CLI::App& sub) {
      auto file = std::make_shared<std::string>();
      auto viable = std::make_shared<std::string>();
      auto output = std::make_shared<std::string>();
      auto axioms = std::make_shared<bool>(false);
      sub.add_option("FILE", *file, "µGraph file (the input program)")->required();
      sub.add_option("--viable", *viable,
                     "an abstract expression, e.g. '(sum 4096 (mul X W))': is it viable for "
                     "(a subexpression of something equivalent to) the output, or equivalent?");
      sub.add_option("--output", *output, "which output is the target (default: the first)");
      sub.add_flag("--axioms", *axioms, "also list the axioms used for this target");
      return [=]() -> int {
        weft::Graph g = weft::load_graph(*file);
        weft::TermStore store;
        std::vector<weft::TermId> outs = weft::abstract_outputs(g, store);
        for (size_t i = 0; i < outs.size(); ++i)
          std::cout << g.value(g.outputs[i]).name << " = " << store.str(outs[i]) << "\n";
        if (viable->empty() && !*axioms) return 0;
        size_t which = 0;
        if (!output->empty()) {
          which = outs.size();
          for (size_t i = 0; i < outs.size(); ++i)
            if (g.value(g.outputs[i]).name == *output) which = i;
          if (which == outs.size())
            throw weft::UserError(
                weft::SourceLoc{*file},
                fmt::format("--output {}: the program has no such output", *output));
        }
        if (outs.empty())
          throw weft::UserError(weft::SourceLoc{*file}, "the program has no outputs");
        weft::TermId target = outs[which];
        if (*axioms) {
          for (const auto& a : weft::axioms_for(store, target))
            std::cout << "A_eq " << a.name << ": " << a.lhs << (a.both_ways ? " = " : " -> ")
                      << a.rhs << "    # " << a.why << "\n";
          for (const auto& a : weft::sub_axioms())
            std::cout << "A_sub " << a.name << ": " << a.rule << "    # " << a.why << "\n";
        }
        if (viable->empty()) return 0;
        weft::TermId t = store.parse(*viable);
        weft::Oracle oracle(store, target);
        const auto& st = oracle.stats();
        std::cout << fmt::format(
            "# e-graph of {}: {} nodes, {} classes ({} subexpression classes), "
            "{} rules, {} after {} iterations in {:.3f} s\n",
            g.value(g.outputs[which]).name, st.nodes, st.classes, oracle.viable_classes(), st.rules,
            weft::saturation_stop_name(st.stop), st.iterations, st.seconds);
        std::cout << store.str(t) << ": " << weft::prune_verdict_name(oracle.classify(t)) << "\n";
        return 0;
      };
    });
