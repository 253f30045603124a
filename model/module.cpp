// Lookups and structural equality of model modules.
#include "model/module.h"

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
    case CallKind::model_op:
      return "model_op";
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
  }
  return "?";
}

}  // namespace weft
