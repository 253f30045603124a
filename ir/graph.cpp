// Graph queries, structural equality and the type-inferring builder.
#include "ir/graph.h"

#include <fmt/format.h>

#include <set>

namespace weft {

std::string_view level_name(Level level) {
  switch (level) {
    case Level::kernel:
      return "kernel";
    case Level::block:
      return "block";
    case Level::thread:
      return "thread";
  }
  return "?";
}

ValueId Graph::find(std::string_view n) const {
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].name == n) return static_cast<ValueId>(i);
  return -1;
}

std::vector<int> Graph::producers() const {
  std::vector<int> p(values.size(), -1);
  for (size_t i = 0; i < ops.size(); ++i)
    for (ValueId v : ops[i].outputs) p[v] = static_cast<int>(i);
  return p;
}

std::vector<std::vector<int>> Graph::consumers() const {
  std::vector<std::vector<int>> c(values.size());
  for (size_t i = 0; i < ops.size(); ++i)
    for (ValueId v : ops[i].inputs) c[v].push_back(static_cast<int>(i));
  return c;
}

bool operator==(const Op& a, const Op& b) {
  if (a.kind != b.kind || a.inputs != b.inputs || a.outputs != b.outputs || !(a.attrs == b.attrs) ||
      a.stage != b.stage)
    return false;
  if (static_cast<bool>(a.body) != static_cast<bool>(b.body)) return false;
  return !a.body || *a.body == *b.body;
}

bool operator==(const Graph& a, const Graph& b) {
  if (a.level != b.level || a.name != b.name || a.inputs != b.inputs || a.outputs != b.outputs ||
      a.values.size() != b.values.size() || a.ops.size() != b.ops.size() ||
      a.interfaces != b.interfaces)
    return false;
  if (a.level == Level::block && (a.grid != b.grid || a.threads != b.threads || a.loop != b.loop))
    return false;
  for (size_t i = 0; i < a.values.size(); ++i)
    if (a.values[i].name != b.values[i].name || !(a.values[i].type == b.values[i].type))
      return false;
  for (size_t i = 0; i < a.ops.size(); ++i)
    if (!(a.ops[i] == b.ops[i])) return false;
  return true;
}

GraphBuilder::GraphBuilder(Level level, std::string name) {
  g_.level = level;
  g_.name = std::move(name);
}

void GraphBuilder::set_block_params(std::array<int64_t, 3> grid, int64_t threads, int64_t loop,
                                    SourceLoc loc) {
  WEFT_CHECK(g_.level == Level::block, "block parameters on a {} graph", level_name(g_.level));
  for (int i = 0; i < 3; ++i)
    if (grid[i] < 1) WEFT_USER_ERROR(loc, "grid dims must be >= 1, got {}", grid[i]);
  if (threads < 1) WEFT_USER_ERROR(loc, "block (threads per block) must be >= 1, got {}", threads);
  if (loop < 1) WEFT_USER_ERROR(loc, "loop (for-loop range) must be >= 1, got {}", loop);
  g_.grid = grid;
  g_.threads = threads;
  g_.loop = loop;
  g_.loc = loc;
}

std::string GraphBuilder::fresh_name() {
  for (;;) {
    std::string n = fmt::format("t{}", next_fresh_++);
    if (g_.find(n) < 0) return n;
  }
}

ValueId GraphBuilder::new_value(std::string name, TensorType type, const SourceLoc& loc) {
  if (name.empty()) name = fresh_name();
  if (ValueId prior = g_.find(name); prior >= 0) {
    const SourceLoc& where = g_.values[prior].loc;
    WEFT_USER_ERROR(loc, "'{}' is already defined{}; every name is assigned once", name,
                    where.known() ? fmt::format(" (at line {})", where.line) : "");
  }
  g_.values.push_back(Value{std::move(name), std::move(type), loc});
  return static_cast<ValueId>(g_.values.size() - 1);
}

ValueId GraphBuilder::add_input(std::string name, TensorType type, SourceLoc loc) {
  if (type.shape.empty()) WEFT_USER_ERROR(loc, "input '{}' needs at least one dim", name);
  for (int64_t d : type.shape)
    if (d < 1) WEFT_USER_ERROR(loc, "input '{}' has a dim of size {}; sizes must be >= 1", name, d);
  ValueId id = new_value(std::move(name), std::move(type), loc);
  g_.inputs.push_back(id);
  return id;
}

int64_t combined_elements(const Graph& g, const Op& op) {
  switch (op_info(op.kind).op_class) {
    case OpClass::matmul:
      return g.type(op.inputs.at(0)).shape.back();
    case OpClass::reduction: {
      const Shape& s = g.type(op.inputs.at(0)).shape;
      int64_t dim = op.attrs.get_int("dim");
      WEFT_CHECK(dim >= 0 && dim < static_cast<int64_t>(s.size()), "reduction dim {} out of range",
                 dim);
      return s[static_cast<size_t>(dim)] / op.attrs.get_int_or("to", 1);
    }
    case OpClass::structure: {  // for-loop accumulators combine the iterations' tiles
      Symbolic s = op_info(op.kind).symbolic;
      return s == Symbolic::sum || s == Symbolic::max ? g.loop : 0;
    }
    case OpClass::unary:
    case OpClass::binary:
    case OpClass::movement:
    case OpClass::composite:
    case OpClass::hierarchy:
    case OpClass::model:
      return 0;
  }
  return 0;
}

void check_op_arity(const OpInfo& info, size_t n, const SourceLoc& loc) {
  bool ok = static_cast<int>(n) >= info.min_inputs &&
            (info.max_inputs < 0 || static_cast<int>(n) <= info.max_inputs);
  if (ok) return;
  std::string want = info.max_inputs < 0 ? fmt::format("at least {}", info.min_inputs)
                     : info.min_inputs == info.max_inputs
                         ? fmt::format("{}", info.min_inputs)
                         : fmt::format("{} to {}", info.min_inputs, info.max_inputs);
  WEFT_USER_ERROR(loc, "'{}' takes {} operand{}, got {}", info.name, want, want == "1" ? "" : "s",
                  n);
}

void check_op_level(const OpInfo& info, Level level, const SourceLoc& loc) {
  uint8_t bit = level == Level::kernel ? kAtKernel : level == Level::block ? kAtBlock : kAtThread;
  if (info.levels & bit) return;
  if (!(info.levels & kAtUGraph))
    WEFT_USER_ERROR(loc,
                    "'{}' is a model-level operator: model functions (.wmod) call it, no µGraph "
                    "holds it",
                    info.name);
  WEFT_USER_ERROR(loc, "'{}' cannot appear in a {} graph (allowed in: {})", info.name,
                  level_name(level), levels_text(info.levels & kAtUGraph));
}

std::vector<ValueId> GraphBuilder::add_op(OpKind kind, std::vector<ValueId> inputs, Attrs attrs,
                                          std::vector<std::string> names, SourceLoc loc,
                                          Stage stage) {
  const OpInfo& info = op_info(kind);
  check_op_level(info, g_.level, loc);
  WEFT_CHECK(info.infer != nullptr, "'{}' must be added with add_nested", info.name);
  check_op_arity(info, inputs.size(), loc);
  std::vector<TensorType> in_types;
  for (ValueId v : inputs) {
    WEFT_CHECK(v >= 0 && static_cast<size_t>(v) < g_.values.size(), "bad value id {}", v);
    in_types.push_back(g_.values[v].type);
  }
  std::vector<TensorType> out_types;
  try {
    complete_attrs(info, attrs);
    InferContext ctx = g_.infer_context();
    out_types = info.infer(in_types, attrs, ctx);
  } catch (const UserError& e) {
    throw UserError(loc, fmt::format("{}: {}", info.name, e.message()));
  }
  if (!names.empty() && names.size() != out_types.size())
    WEFT_USER_ERROR(loc, "'{}' here produces {} result{}, but {} name{} given", info.name,
                    out_types.size(), out_types.size() == 1 ? "" : "s", names.size(),
                    names.size() == 1 ? " is" : "s are");
  Op op;
  op.kind = kind;
  op.inputs = std::move(inputs);
  op.attrs = std::move(attrs);
  op.stage = g_.level == Level::block ? stage : Stage::loop;
  op.loc = loc;
  for (size_t i = 0; i < out_types.size(); ++i)
    op.outputs.push_back(new_value(names.empty() ? std::string() : names[i], out_types[i], loc));
  if (kind == OpKind::save) g_.outputs.push_back(op.outputs[0]);
  g_.ops.push_back(std::move(op));
  return g_.ops.back().outputs;
}

ValueId GraphBuilder::add(OpKind kind, std::vector<ValueId> inputs, Attrs attrs, std::string name,
                          SourceLoc loc, Stage stage) {
  std::vector<std::string> names;
  if (!name.empty()) names.push_back(std::move(name));
  auto out = add_op(kind, std::move(inputs), std::move(attrs), std::move(names), loc, stage);
  WEFT_CHECK(out.size() == 1, "'{}' has {} results", op_info(kind).name, out.size());
  return out[0];
}

// The text form names a body's inputs after the op's operands (docs/format.md): a body built
// elsewhere (a search result spliced into a program whose names it was renamed to avoid) takes
// them here, and a body value that already holds such a name gets a fresh one.
void GraphBuilder::name_body_inputs_after_operands(Graph& body,
                                                   const std::vector<ValueId>& operands) const {
  // The common case (the parser's bodies, the search's) costs one comparison per operand.
  bool renamed = false;
  for (size_t i = 0; i < operands.size(); ++i)
    renamed = renamed || body.values[body.inputs[i]].name != g_.values[operands[i]].name;
  if (!renamed) return;
  std::set<std::string> wanted, taken;
  for (ValueId v : operands) wanted.insert(g_.values[v].name);
  for (const Value& v : body.values) taken.insert(v.name);
  std::vector<bool> is_input(body.values.size(), false);
  for (ValueId v : body.inputs) is_input[static_cast<size_t>(v)] = true;
  for (size_t v = 0; v < body.values.size(); ++v) {
    if (is_input[v] || !wanted.count(body.values[v].name)) continue;
    std::string fresh;
    for (int k = 1; fresh.empty() || taken.count(fresh) || wanted.count(fresh); ++k)
      fresh = fmt::format("{}.{}", body.values[v].name, k);
    taken.insert(fresh);
    body.values[v].name = fresh;
  }
  for (size_t i = 0; i < operands.size(); ++i)
    body.values[body.inputs[i]].name = g_.values[operands[i]].name;
}

std::vector<ValueId> GraphBuilder::add_nested(OpKind kind, std::vector<ValueId> inputs, Graph body,
                                              std::vector<std::string> names, SourceLoc loc,
                                              Stage stage) {
  const OpInfo& info = op_info(kind);
  WEFT_CHECK(kind == OpKind::kernel || kind == OpKind::thread, "'{}' has no body", info.name);
  check_op_level(info, g_.level, loc);
  Level want = kind == OpKind::kernel ? Level::block : Level::thread;
  WEFT_CHECK(body.level == want, "'{}' body is a {} graph", info.name, level_name(body.level));
  if (inputs.empty()) WEFT_USER_ERROR(loc, "'{}' needs at least one operand", info.name);
  WEFT_CHECK(body.inputs.size() == inputs.size(), "'{}' body has {} inputs for {} operands",
             info.name, body.inputs.size(), inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    for (size_t j = 0; j < i; ++j)
      if (inputs[i] == inputs[j])
        WEFT_USER_ERROR(loc, "'{}' is passed twice to {}; pass it once and read it twice inside",
                        g_.values[inputs[i]].name, info.name);
    WEFT_CHECK(body.type(body.inputs[i]) == g_.values[inputs[i]].type,
               "'{}' operand {} type mismatch", info.name, i);
  }
  name_body_inputs_after_operands(body, inputs);
  if (body.outputs.empty())
    WEFT_USER_ERROR(loc, "this {} produces no results ({})", info.name,
                    kind == OpKind::kernel ? "add a save" : "add an output statement");
  if (!names.empty() && names.size() != body.outputs.size())
    WEFT_USER_ERROR(loc, "this {} produces {} result{}, but {} name{} given", info.name,
                    body.outputs.size(), body.outputs.size() == 1 ? "" : "s", names.size(),
                    names.size() == 1 ? " is" : "s are");
  Op op;
  op.kind = kind;
  op.inputs = std::move(inputs);
  op.stage = g_.level == Level::block ? stage : Stage::loop;
  op.loc = loc;
  for (size_t i = 0; i < body.outputs.size(); ++i) {
    std::string name = names.empty() ? std::string() : names[i];
    if (kind == OpKind::kernel && name.empty()) name = body.value(body.outputs[i]).name;
    op.outputs.push_back(new_value(std::move(name), body.type(body.outputs[i]), loc));
  }
  op.body = std::make_shared<const Graph>(std::move(body));
  g_.ops.push_back(std::move(op));
  return g_.ops.back().outputs;
}

void GraphBuilder::add_output(ValueId id, SourceLoc loc) {
  WEFT_CHECK(g_.level != Level::block, "block graph outputs come from save ops");
  for (ValueId o : g_.outputs)
    if (o == id) WEFT_USER_ERROR(loc, "'{}' is already an output", g_.values[id].name);
  g_.outputs.push_back(id);
}

}  // namespace weft
