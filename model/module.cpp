// Lookups and structural equality of model modules.
#include "model/module.h"

#include <algorithm>
#include <set>

namespace weft {

const Function* Module::find_function(std::string_view name) const {
  for (const Function& f : functions)
    if (f.name == name) return &f;
  return nullptr;
}

const UGraphDef* Module::find_ugraph(std::string_view name) const {
  for (const UGraphDef& g : ugraphs)
    if (g.name == name) return &g;
  return nullptr;
}

bool operator==(const Module& a, const Module& b) {
  if (a.name != b.name || a.ugraphs != b.ugraphs || a.functions != b.functions) return false;
  if (a.syms.vars().size() != b.syms.vars().size()) return false;
  for (const auto& [name, var] : a.syms.vars()) {
    const SymVar* other = b.syms.find(name);
    if (!other || other->lo() != var.lo() || other->hi() != var.hi()) return false;
  }
  return true;
}

std::string_view call_kind_name(CallKind kind) {
  switch (kind) {
    case CallKind::op:
      return "op";
    case CallKind::ugraph:
      return "call_ugraph";
    case CallKind::lib:
      return "call_lib";
    case CallKind::func:
      return "call";
    case CallKind::tuple:
      return "tuple";
    case CallKind::item:
      return "item";
    case CallKind::match_cast:
      return "match_cast";
    case CallKind::if_:
      return "if";
  }
  return "?";
}

bool operator==(const IfBranch& a, const IfBranch& b) {
  return a.bindings == b.bindings && a.result == b.result;
}

std::map<std::string, MType> value_types(const Function& f) {
  std::map<std::string, MType> types;
  for (const Param& p : f.params) types[p.name] = p.type;
  for (const Block& blk : f.blocks)
    for (const Binding& b : blk.bindings) types[b.var] = b.type;
  return types;
}

std::vector<std::string> reads_of(const Call& c) {
  std::vector<std::string> out = c.args;
  for (const IfBranch& br : c.branches) {
    std::set<std::string> local;
    auto read = [&](const std::string& name) {
      if (!local.count(name) && std::find(out.begin(), out.end(), name) == out.end())
        out.push_back(name);
    };
    for (const Binding& b : br.bindings) {
      for (const std::string& name : reads_of(b.call)) read(name);
      local.insert(b.var);
    }
    read(br.result);
  }
  return out;
}

}  // namespace weft
