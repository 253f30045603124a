// Per-operator predicted time of a model function, cached per operator, attributes and shapes.
#include "rewrite/model_cost.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "cost/cost_model.h"
#include "ir/graph.h"
#include "model/evaluate_at.h"
#include "model/specialize.h"
#include "sym/rewrite.h"

namespace weft {

namespace {

std::string value_text(const AttrValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* r = std::get_if<Rational>(&v)) return r->str();
  return fmt::format("[{}]", fmt::join(std::get<std::vector<int64_t>>(v), ","));
}

}  // namespace

ModelCost::Entry ModelCost::entry(const Binding& b, const std::map<std::string, MType>& types) {
  if (b.call.kind != CallKind::op) return {};
  auto kind = op_by_name(b.call.callee);
  if (!kind || !(op_info(*kind).levels & kAtKernel)) return {};
  try {
    // The key first: most bindings are priced already (every graph of a search repeats them).
    std::vector<TensorType> in;
    std::string key = b.call.callee;
    for (const std::string& a : b.call.args) {
      auto t = tensor_type_at(types.at(a), at_);
      if (!t) return {};
      key += " " + t->str();
      in.push_back(*t);
    }
    const Attrs attrs = evaluate_attrs(b.call.attrs, at_, b.call.loc);
    for (const auto& [name, value] : attrs.entries())
      key += fmt::format(" {}={}", name, value_text(value));
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    GraphBuilder gb(Level::kernel, "op");
    std::vector<ValueId> ids;
    for (const TensorType& t : in) ids.push_back(gb.add_input(fmt::format("x{}", ids.size()), t));
    for (ValueId out : gb.add_op(*kind, ids, attrs)) gb.add_output(out);
    const CostReport report = predict(std::move(gb).finish(), target_);
    Entry e{report.total_s, report.kernel_launches()};
    cache_[key] = e;
    return e;
  } catch (const UserError&) {
    return {};  // not a kernel at this binding: nothing a rule changes
  }
}

ModelCost::Entry ModelCost::totals(const Function& f) {
  const std::map<std::string, MType> types = value_types(f);
  Entry total;
  std::set<std::string> constants = constants_;
  for (const Block& blk : f.blocks)
    for (const Binding& b : blk.bindings) {
      if (!constants.empty() && folds_at_compile_time(b, types, constants)) {
        constants.insert(b.var);
        continue;
      }
      const Entry e = entry(b, types);
      total.seconds += e.seconds;
      total.kernels += e.kernels;
    }
  return total;
}

double ModelCost::function_s(const Function& f) {
  return totals(f).seconds;
}

int ModelCost::kernels(const Function& f) {
  return totals(f).kernels;
}

bool folds_at_compile_time(const Binding& b, const std::map<std::string, MType>& types,
                           const std::set<std::string>& constants) {
  const CallKind k = b.call.kind;
  if (k != CallKind::op && k != CallKind::item && k != CallKind::tuple) return false;
  // Any operator of the table (they are all functions of their operands and attributes), with
  // attributes that name no symbolic variable: dims_tensor(values=[seq]) has a fixed shape but
  // not a fixed value.
  if (k == CallKind::op && !op_by_name(b.call.callee)) return false;
  for (const auto& [name, value] : b.call.attrs) {
    if (const auto* e = std::get_if<SymExpr>(&value); e && !e->as_constant()) return false;
    if (const auto* l = std::get_if<std::vector<SymExpr>>(&value))
      for (const SymExpr& x : *l)
        if (!x.as_constant()) return false;
  }
  auto elements = [](const MType& t) -> int64_t {
    if (t.kind == MTypeKind::tuple) {
      int64_t n = 0;
      for (const MType& f : t.fields) {
        const auto c = tensor_type_at(f, {});
        if (!c) return -1;
        n += numel(c->shape);
      }
      return n;
    }
    const auto c = tensor_type_at(t, {});
    return c ? numel(c->shape) : -1;
  };
  // An operator of no operands (range, dims_tensor) once its sizes are fixed: up to a size whose
  // storage as a weight stays small.
  if (b.call.args.empty()) {
    const int64_t n = k == CallKind::op ? elements(b.type) : -1;
    return n >= 0 && n <= kLargestFoldedWithoutOperands;
  }
  int64_t in = 0;
  for (const std::string& a : b.call.args) {
    if (!constants.count(a)) return false;
    const int64_t n = elements(types.at(a));
    if (n < 0) return false;
    in += n;
  }
  const int64_t out = elements(b.type);
  // A bool, integer or f64 result (a mask, indices) may be larger than its operands, within the
  // bound above: it would run in the VM's f64 path at every call, never inside a fused kernel.
  const bool index_like = !b.type.every_tensor(is_kernel_dtype);
  return out >= 0 &&
         (k == CallKind::item || out <= in || (index_like && out <= kLargestFoldedWithoutOperands));
}

SymBinding representative_binding(const Function& f, const SymBinding& given, int64_t fallback) {
  SymBinding at;
  auto visit = [&](const SymExpr& e) {
    map_variables(e, [&](const SymVar& v) -> SymExpr {
      if (at.count(v.name())) return v;
      if (auto it = given.find(v.name()); it != given.end())
        at[v.name()] = it->second;
      else
        at[v.name()] = std::max(v.lo(), std::min(v.hi().value_or(fallback), fallback));
      return v;
    });
  };
  for (const Param& p : f.params)
    if (p.type.dims)
      for (const SymExpr& d : *p.type.dims) visit(d);
  for (const Block& blk : f.blocks)
    for (const Binding& b : blk.bindings)
      if (b.type.dims)
        for (const SymExpr& d : *b.type.dims) visit(d);
  return at;
}

}  // namespace weft
