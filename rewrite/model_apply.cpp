// A match replaced, deduced and reordered.
#include "rewrite/model_apply.h"

#include <fmt/format.h>

#include <queue>
#include <set>

#include "model/deduce.h"

namespace weft {

bool same_model_type(const MType& a, const MType& b, SymProver& prover) {
  if (a == b) return true;
  if (!a.is_tensor() || !b.is_tensor() || a.dtype != b.dtype || !a.dims || !b.dims ||
      a.dims->size() != b.dims->size())
    return false;
  for (size_t i = 0; i < a.dims->size(); ++i)
    if (!((*a.dims)[i] == (*b.dims)[i]) &&
        prover.prove_eq((*a.dims)[i], (*b.dims)[i]).truth != SymTruth::proven_true)
      return false;
  return true;
}

std::optional<MAttrs> lifted_attrs(const Attrs& attrs, int lift,
                                   const std::optional<Rational>& base) {
  MAttrs out;
  for (const auto& [name, value] : attrs.entries()) {
    if (const auto* i = std::get_if<int64_t>(&value))
      out[name] = SymExpr(axis_attribute(name) ? *i + lift : *i);
    else if (const auto* r = std::get_if<Rational>(&value)) {
      const std::optional<Rational> q = rule_base_pow(*r, base);
      if (!q) return std::nullopt;
      out[name] = *q;
    } else if (const auto* l = std::get_if<std::vector<int64_t>>(&value)) {
      std::vector<SymExpr> list;
      for (int64_t x : *l) list.emplace_back(x);
      out[name] = list;
    }
  }
  return out;
}

std::optional<std::vector<Binding>> dependency_order(std::vector<Binding> bindings,
                                                     const std::vector<int>& priority) {
  std::map<std::string, size_t> def;
  for (size_t i = 0; i < bindings.size(); ++i) def[bindings[i].var] = i;
  std::vector<int> waiting(bindings.size(), 0);
  std::vector<std::vector<size_t>> users(bindings.size());
  for (size_t i = 0; i < bindings.size(); ++i) {
    std::set<size_t> deps;
    for (const std::string& v : reads_of(bindings[i].call))
      if (auto it = def.find(v); it != def.end() && it->second != i) deps.insert(it->second);
    waiting[i] = static_cast<int>(deps.size());
    for (size_t d : deps) users[d].push_back(i);
  }
  using Item = std::pair<int, size_t>;
  std::priority_queue<Item, std::vector<Item>, std::greater<>> ready;
  for (size_t i = 0; i < bindings.size(); ++i)
    if (waiting[i] == 0) ready.push({priority[i], i});
  std::vector<Binding> out;
  while (!ready.empty()) {
    const size_t i = ready.top().second;
    ready.pop();
    out.push_back(std::move(bindings[i]));
    for (size_t u : users[i])
      if (--waiting[u] == 0) ready.push({priority[u], u});
  }
  if (out.size() != bindings.size()) return std::nullopt;
  return out;
}

std::map<std::string, std::string> compose_renames(std::map<std::string, std::string> earlier,
                                                   const std::map<std::string, std::string>& now) {
  for (auto& [from, to] : earlier)
    if (auto it = now.find(to); it != now.end()) to = it->second;
  for (const auto& [from, to] : now) earlier.emplace(from, to);
  return earlier;
}

void rename_reads(Binding& b, const std::map<std::string, std::string>& renamed) {
  for (std::string& a : b.call.args)
    if (auto it = renamed.find(a); it != renamed.end()) a = it->second;
  for (IfBranch& br : b.call.branches) {
    for (Binding& inner : br.bindings) rename_reads(inner, renamed);
    if (auto it = renamed.find(br.result); it != renamed.end()) br.result = it->second;
  }
}

std::optional<AppliedRewrite> apply_match(const Function& f, const FunctionIndex& index,
                                          const RewriteMatch& m, const Pattern& replacement,
                                          SymProver& prover, int& fresh) {
  const Block& blk = f.blocks.at(static_cast<size_t>(m.block));
  std::set<int> removed(m.ops.begin(), m.ops.end());
  removed.insert(m.items.begin(), m.items.end());
  const Binding& anchor = blk.bindings.at(static_cast<size_t>(m.ops.back()));
  std::string base = anchor.var;
  for (const std::string& o : m.outputs)
    if (!o.empty()) base = o;
  auto fresh_name = [&] {
    std::string name;
    do name = fmt::format("{}.rw{}", base, fresh++);
    while (index.defined.count(name));
    return name;
  };
  // Which pattern outputs each replacement value is.
  std::map<std::pair<int, int>, std::vector<size_t>> output_of;
  for (size_t o = 0; o < replacement.outputs.size(); ++o)
    if (!replacement.outputs[o].input)
      output_of[{replacement.outputs[o].index, replacement.outputs[o].result}].push_back(o);
  std::set<std::string> named;  // outputs already given to a new binding
  auto name_for = [&](int j, int r) {
    if (auto it = output_of.find({j, r}); it != output_of.end())
      for (size_t o : it->second)
        if (!m.outputs[o].empty() && named.insert(m.outputs[o]).second) return m.outputs[o];
    return fresh_name();
  };
  std::map<std::string, MType> new_types;  // of the values this rewrite adds
  auto type_of = [&](const std::string& v) -> const MType& {
    auto it = new_types.find(v);
    return it != new_types.end() ? it->second : index.types.at(v);
  };
  std::vector<std::vector<std::string>> values(replacement.ops.size());
  auto value_of = [&](const PatternRef& ref) -> std::string {
    if (ref.input) return m.inputs.at(static_cast<size_t>(ref.index));
    return values.at(static_cast<size_t>(ref.index)).at(static_cast<size_t>(ref.result));
  };
  std::vector<Binding> added;
  for (size_t j = 0; j < replacement.ops.size(); ++j) {
    const PatternOp& po = replacement.ops[j];
    Binding b;
    b.loc = anchor.loc;
    b.call.kind = CallKind::op;
    b.call.callee = std::string(op_info(po.kind).name);
    b.call.loc = anchor.loc;
    std::optional<MAttrs> attrs = lifted_attrs(po.attrs, m.lift, m.base);
    if (!attrs) return std::nullopt;
    b.call.attrs = std::move(*attrs);
    std::vector<MType> in;
    for (const PatternRef& ref : po.operands) {
      const std::string v = value_of(ref);
      if (v.empty()) return std::nullopt;  // an input this side reads but the match lacks
      b.call.args.push_back(v);
      in.push_back(type_of(v));
    }
    std::vector<SymCondition> checks;
    try {
      DeduceContext ctx(prover, anchor.loc, &checks);
      b.type = deduce_table_op(ctx, po.kind, in, b.call.attrs);
    } catch (const UserError&) {
      return std::nullopt;
    }
    if (!checks.empty()) return std::nullopt;  // unprovable shape conditions: not applied
    const size_t results = po.result_ranks.size();
    if (results == 1) {
      b.var = name_for(static_cast<int>(j), 0);
      new_types[b.var] = b.type;
      values[j].push_back(b.var);
      added.push_back(std::move(b));
      continue;
    }
    if (b.type.kind != MTypeKind::tuple || b.type.fields.size() != results) return std::nullopt;
    b.var = fresh_name();
    const std::string tuple = b.var;
    const std::vector<MType> fields = b.type.fields;
    added.push_back(std::move(b));
    for (size_t r = 0; r < results; ++r) {
      Binding item;
      item.loc = anchor.loc;
      item.call.kind = CallKind::item;
      item.call.args = {tuple};
      item.call.attrs["index"] = SymExpr(static_cast<int64_t>(r));
      item.call.loc = anchor.loc;
      item.type = fields[r];
      item.var = name_for(static_cast<int>(j), static_cast<int>(r));
      new_types[item.var] = item.type;
      values[j].push_back(item.var);
      added.push_back(std::move(item));
    }
  }
  AppliedRewrite out;
  for (size_t o = 0; o < m.outputs.size(); ++o) {
    if (m.outputs[o].empty()) continue;
    const std::string now = value_of(replacement.outputs.at(o));
    if (!same_model_type(type_of(now), index.types.at(m.outputs[o]), prover)) return std::nullopt;
    if (now != m.outputs[o]) out.renamed[m.outputs[o]] = now;
  }
  out.function = f;
  std::vector<Binding> bindings;
  std::vector<int> priority;
  const int first = *removed.begin();
  for (size_t i = 0; i < blk.bindings.size(); ++i) {
    if (removed.count(static_cast<int>(i))) continue;
    bindings.push_back(blk.bindings[i]);
    priority.push_back(2 * static_cast<int>(i));
  }
  std::set<std::string> gone;  // removed and not defined again
  for (int i : removed) gone.insert(blk.bindings[static_cast<size_t>(i)].var);
  for (const Binding& b : added) gone.erase(b.var);
  for (Binding& b : added) {
    bindings.push_back(std::move(b));
    priority.push_back(2 * first + 1);
  }
  for (Binding& b : bindings) rename_reads(b, out.renamed);
  for (const Binding& b : bindings)
    for (const std::string& v : reads_of(b.call))
      WEFT_CHECK(!gone.count(v) || out.renamed.count(v),
                 "rewrite of '{}' removes '{}', which '{}' still reads", anchor.var, v, b.var);
  auto ordered = dependency_order(std::move(bindings), priority);
  if (!ordered) return std::nullopt;
  out.function.blocks[static_cast<size_t>(m.block)].bindings = std::move(*ordered);
  for (size_t bi = 0; bi < out.function.blocks.size(); ++bi)
    if (static_cast<int>(bi) != m.block)
      for (Binding& b : out.function.blocks[bi].bindings) rename_reads(b, out.renamed);
  if (auto it = out.renamed.find(out.function.result); it != out.renamed.end())
    out.function.result = it->second;
  return out;
}

}  // namespace weft
