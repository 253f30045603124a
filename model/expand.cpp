// Composite expansion: each binding of a model operator with an `expand` facet becomes the
// bindings it returns; the module is deduced again.
#include "model/expand.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "model/deduce.h"
#include "model/model_ops.h"

namespace weft {

Module expand_composites(const Module& module, SymProver& prover) {
  Module out = module;
  bool changed = false;
  for (Function& f : out.functions) {
    std::set<std::string> names;
    std::map<std::string, MType> types;
    for (const Param& p : f.params) {
      names.insert(p.name);
      types.emplace(p.name, p.type);
    }
    for (const Block& b : f.blocks)
      for (const Binding& x : b.bindings) names.insert(x.var);
    for (Block& block : f.blocks) {
      std::vector<Binding> bindings;
      for (const Binding& b : block.bindings) {
        std::optional<OpKind> kind =
            b.call.kind == CallKind::op ? op_by_name(b.call.callee) : std::nullopt;
        const ModelOpImpl* impl = kind ? model_impl(*kind) : nullptr;
        if (!impl || !impl->expand) {
          types.emplace(b.var, b.type);
          bindings.push_back(b);
          continue;
        }
        std::vector<MType> in;
        for (const std::string& a : b.call.args) in.push_back(types.at(a));
        auto fresh = [&](const char* suffix) {
          std::string name = fmt::format("{}.{}", b.var, suffix);
          for (int i = 2; names.count(name); ++i) name = fmt::format("{}.{}{}", b.var, suffix, i);
          names.insert(name);
          return name;
        };
        for (Binding& x : impl->expand(b, in, fresh)) bindings.push_back(std::move(x));
        types.emplace(b.var, b.type);
        changed = true;
      }
      block.bindings = std::move(bindings);
    }
  }
  if (changed) deduce_module(out, prover);
  return out;
}

}  // namespace weft
