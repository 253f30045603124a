// The constant-aware screen: the program's outputs saturated once with constants as terms, each
// candidate's outputs looked up in them.
#include "search/constant_screen.h"

#include "absexpr/of_graph.h"

namespace weft {

ConstantScreen::ConstantScreen(const Graph& program, const SaturationLimits& limits) {
  for (TermId t : abstract_outputs(program, store_))
    oracles_.push_back(std::make_unique<Oracle>(store_, t, limits));
}

bool ConstantScreen::may_be_equivalent(const Graph& candidate) {
  const std::vector<TermId> outputs = abstract_outputs(candidate, store_);
  if (outputs.size() != oracles_.size()) return true;  // not this screen's to judge
  for (size_t i = 0; i < outputs.size(); ++i)
    if (oracles_[i]->complete() && !oracles_[i]->is_equivalent(outputs[i])) return false;
  return true;
}

}  // namespace weft
