// Expansion of composite operators into primitives, rebuilt through the type-inferring builder.
#include "ir/expand_composites.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <string>

namespace weft {

namespace {

bool has_composite(const Graph& g) {
  for (const Op& op : g.ops)
    if (op_info(op.kind).op_class == OpClass::composite) return true;
  return false;
}

class Expander {
 public:
  explicit Expander(const Graph& g) : g_(g), b_(Level::kernel, g.name), map_(g.values.size(), -1) {
    for (const Value& v : g.values) taken_.insert(v.name);
  }

  Graph run() && {
    for (ValueId in : g_.inputs) {
      const Value& v = g_.value(in);
      map_[in] = b_.add_input(v.name, v.type, v.loc);
    }
    for (const Op& op : g_.ops) {
      std::vector<ValueId> ins;
      for (ValueId v : op.inputs) ins.push_back(map_[v]);
      std::vector<std::string> names;
      for (ValueId v : op.outputs) names.push_back(g_.value(v).name);
      std::vector<ValueId> outs;
      if (op.kind == OpKind::rms_norm)
        outs = {rms_norm(op, ins[0], names[0])};
      else if (op.kind == OpKind::softmax)
        outs = {softmax(op, ins[0], names[0])};
      else if (op.body)
        outs = b_.add_nested(op.kind, ins, *op.body, names, op.loc, op.stage);
      else
        outs = b_.add_op(op.kind, ins, op.attrs, names, op.loc, op.stage);
      for (size_t i = 0; i < outs.size(); ++i) map_[op.outputs[i]] = outs[i];
    }
    for (ValueId v : g_.outputs) b_.add_output(map_[v], g_.value(v).loc);
    Graph out = std::move(b_).finish();
    out.loc = g_.loc;
    out.interfaces = g_.interfaces;  // inputs and outputs keep their names
    return out;
  }

 private:
  // `base.1`, `base.2`, ...: the next one no value of the original or expanded graph uses.
  std::string fresh(const std::string& base) {
    for (;;) {
      std::string n = fmt::format("{}.{}", base, ++counter_[base]);
      if (taken_.insert(n).second) return n;
    }
  }

  ValueId step(OpKind kind, std::vector<ValueId> ins, Attrs attrs, const std::string& name,
               const SourceLoc& loc) {
    return b_.add(kind, std::move(ins), std::move(attrs), name, loc);
  }

  ValueId rms_norm(const Op& op, ValueId x, const std::string& name) {
    int64_t dim = op.attrs.get_int("dim");
    Rational eps = op.attrs.get_rational("eps");
    ValueId sq = step(OpKind::sqr, {x}, {}, fresh(name), op.loc);
    ValueId mean = step(OpKind::mean, {sq}, {{"dim", dim}}, fresh(name), op.loc);
    if (!(eps == Rational(0)))
      mean = step(OpKind::shift, {mean}, {{"offset", eps}}, fresh(name), op.loc);
    ValueId root = step(OpKind::sqrt, {mean}, {}, fresh(name), op.loc);
    return step(OpKind::div, {x, root}, {}, name, op.loc);
  }

  ValueId softmax(const Op& op, ValueId x, const std::string& name) {
    int64_t dim = op.attrs.get_int("dim");
    ValueId e = step(OpKind::exp, {x}, {}, fresh(name), op.loc);
    ValueId s = step(OpKind::sum, {e}, {{"dim", dim}}, fresh(name), op.loc);
    return step(OpKind::div, {e, s}, {}, name, op.loc);
  }

  const Graph& g_;
  GraphBuilder b_;
  std::vector<ValueId> map_;
  std::set<std::string> taken_;
  std::map<std::string, int> counter_;
};

}  // namespace

Graph expand_composites(const Graph& g) {
  if (!has_composite(g)) return g;
  WEFT_CHECK(g.level == Level::kernel, "composites appear in kernel graphs only");
  return Expander(g).run();
}

Graph composite_expansion(const Graph& g, const Op& op) {
  WEFT_CHECK(op_info(op.kind).op_class == OpClass::composite, "'{}' is not a composite",
             op_info(op.kind).name);
  GraphBuilder b(Level::kernel);
  std::vector<ValueId> ins;
  // Operand names no result name can take ('%' is not a name character of the text format).
  for (size_t i = 0; i < op.inputs.size(); ++i)
    ins.push_back(b.add_input(fmt::format("%{}", i), g.type(op.inputs[i])));
  std::vector<std::string> names;
  for (ValueId v : op.outputs) names.push_back(g.value(v).name);
  for (ValueId v : b.add_op(op.kind, ins, op.attrs, names)) b.add_output(v);
  return expand_composites(std::move(b).finish());
}

}  // namespace weft
