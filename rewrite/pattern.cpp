// Rule sides read into patterns.
#include "rewrite/pattern.h"

#include <map>

namespace weft {

int Pattern::rank(const PatternRef& r) const {
  if (r.input) return static_cast<int>(input_dims.at(static_cast<size_t>(r.index)).size());
  return ops.at(static_cast<size_t>(r.index)).result_ranks.at(static_cast<size_t>(r.result));
}

bool axis_attribute(const std::string& name) {
  return name == "dim";
}

Pattern rule_pattern(const Rule& rule, bool target_side) {
  const Graph g = instantiate(rule, target_side, instantiation(rule, rule_reading_sizes()));
  Pattern p;
  std::map<ValueId, PatternRef> refs;
  WEFT_CHECK(g.inputs.size() == rule.inputs.size(), "rule {}: {} inputs read, {} declared", rule.id,
             g.inputs.size(), rule.inputs.size());
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    refs[g.inputs[i]] = PatternRef{true, static_cast<int>(i), 0};
    p.input_dims.push_back(rule.inputs[i].dims);
  }
  for (const Op& op : g.ops) {
    PatternOp po;
    po.kind = op.kind;
    po.attrs = op.attrs;
    for (ValueId v : op.inputs) po.operands.push_back(refs.at(v));
    for (size_t r = 0; r < op.outputs.size(); ++r) {
      refs[op.outputs[r]] = PatternRef{false, static_cast<int>(p.ops.size()), static_cast<int>(r)};
      po.result_ranks.push_back(static_cast<int>(g.type(op.outputs[r]).shape.size()));
    }
    p.ops.push_back(std::move(po));
  }
  for (ValueId v : g.outputs) p.outputs.push_back(refs.at(v));
  std::map<OpKind, size_t> counts;
  for (const PatternOp& op : p.ops) ++counts[op.kind];
  p.kind_counts.assign(counts.begin(), counts.end());
  return p;
}

std::vector<RuleDirection> rule_directions(const std::vector<Rule>& rules) {
  std::vector<RuleDirection> out;
  for (const Rule& r : rules) {
    Pattern source = rule_pattern(r, false), target = rule_pattern(r, true);
    if (!source.ops.empty()) out.push_back({r.id, &r, false, source, target});
    if (!target.ops.empty()) out.push_back({r.id, &r, true, target, source});
  }
  return out;
}

}  // namespace weft
