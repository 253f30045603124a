// Forward shape deduction at the model level and the well-formedness check built on it.
#include "model/deduce.h"

#include <fmt/format.h>

#include <set>

#include "ir/dim_algebra.h"
#include "model/library.h"
#include "model/model_ops.h"
#include "sym/rewrite.h"

namespace weft {

void require_tensors(DeduceContext& ctx, const std::vector<MType>& in, const std::string& callee) {
  for (size_t i = 0; i < in.size(); ++i)
    if (!in[i].is_tensor())
      ctx.fail(
          fmt::format("operand {} of '{}' must be a tensor, not {}", i + 1, callee, in[i].str()));
}

namespace {

MAttrValue from_table_value(const AttrValue& v) {
  if (auto* i = std::get_if<int64_t>(&v)) return SymExpr(*i);
  if (auto* r = std::get_if<Rational>(&v)) return *r;
  std::vector<SymExpr> out;
  for (int64_t x : std::get<std::vector<int64_t>>(v)) out.emplace_back(x);
  return out;
}

}  // namespace

void complete_model_attrs(DeduceContext& ctx, const std::vector<AttrSpec>& specs, const char* op,
                          MAttrs& attrs) {
  for (auto& [name, value] : attrs) {
    const AttrSpec* spec = nullptr;
    for (const AttrSpec& s : specs)
      if (name == s.name) spec = &s;
    if (!spec) {
      std::string known;
      for (const AttrSpec& s : specs) known += (known.empty() ? "" : ", ") + std::string(s.name);
      ctx.fail(fmt::format(
          "'{}' has no attribute '{}'{}", op, name,
          known.empty() ? std::string(" (it takes none)") : fmt::format(" (it takes: {})", known)));
    }
    bool ok = false;
    switch (spec->kind) {
      case AttrKind::integer:
      case AttrKind::opt_dim:
        ok = std::holds_alternative<SymExpr>(value);
        break;
      case AttrKind::rational:
        if (auto* e = std::get_if<SymExpr>(&value)) {
          if (auto c = e->as_constant())
            value = Rational(*c);
          else
            ctx.fail(fmt::format("attribute '{}' of '{}' must be a number", name, op));
        }
        ok = std::holds_alternative<Rational>(value);
        break;
      case AttrKind::int_list:
      case AttrKind::dim_map:
        ok = std::holds_alternative<std::vector<SymExpr>>(value);
        break;
    }
    if (!ok) ctx.fail(fmt::format("attribute '{}' of '{}' has the wrong kind of value", name, op));
  }
  for (const AttrSpec& s : specs) {
    if (attrs.count(s.name)) continue;
    if (s.required) ctx.fail(fmt::format("'{}' needs the attribute '{}'", op, s.name));
    attrs.emplace(s.name, from_table_value(s.default_value));
  }
}

MType deduce_by_row_rule(DeduceContext& ctx, const OpInfo& info, const std::vector<MType>& in,
                         MAttrs& attrs) {
  std::vector<SymTensor> operands;
  for (const MType& t : in) operands.push_back({t.dtype, t.rank, t.dims});
  SymbolicDims dims(ctx, info.name, attrs);
  SymResults r = info.shape.symbolic(dims, operands);
  std::vector<MType> out;
  for (SymTensor& t : r.values)
    out.push_back(t.dims ? MType::tensor(t.dtype, std::move(*t.dims))
                         : MType::tensor_of_rank(t.dtype, t.rank));
  return r.tuple ? MType::tuple(std::move(out)) : std::move(out.at(0));
}

MType deduce_table_op(DeduceContext& ctx, OpKind kind, const std::vector<MType>& in,
                      MAttrs& attrs) {
  const OpInfo& info = op_info(kind);
  if (!(info.levels & kAtModel))
    ctx.fail(
        fmt::format("'{}' is not a model-level operator (it belongs in {}); a model calls the "
                    "operators `weft ops` marks model-level, and µGraphs through call_ugraph",
                    info.name, levels_text(info.levels)));
  int n = static_cast<int>(in.size());
  if (n < info.min_inputs || (info.max_inputs >= 0 && n > info.max_inputs))
    ctx.fail(fmt::format("'{}' takes {} operand{}, got {}", info.name,
                         info.max_inputs == info.min_inputs
                             ? std::to_string(info.min_inputs)
                             : fmt::format("at least {}", info.min_inputs),
                         info.min_inputs == 1 && info.max_inputs == 1 ? "" : "s", n));
  require_tensors(ctx, in, info.name);
  complete_model_attrs(ctx, info.attrs, info.name, attrs);
  if (info.shape.symbolic) return deduce_by_row_rule(ctx, info, in, attrs);
  const ModelOpImpl* impl = model_impl(kind);
  WEFT_CHECK(impl != nullptr, "'{}' has the model level but no model shape rule", info.name);
  return impl->infer(ctx, in, attrs);
}

namespace {

bool is_bare_var(const SymExpr& e) {
  const SymAtom* a = e.as_atom();
  return a && a->kind == SymAtomKind::var;
}

// The symbolic variables of a type's dims and values.
void collect_vars(const MType& t, std::vector<SymVar>& out) {
  if (t.dims)
    for (const SymExpr& d : *t.dims)
      for (SymVar& v : sym_variables(d)) out.push_back(std::move(v));
  if (t.value)
    for (SymVar& v : sym_variables(*t.value)) out.push_back(std::move(v));
  for (const MType& f : t.fields) collect_vars(f, out);
}

// Variables that `t` defines: its bare dims (and an int's bare value).
void collect_definitions(const MType& t, std::set<std::string>& out) {
  if (t.dims)
    for (const SymExpr& d : *t.dims)
      if (is_bare_var(d)) out.insert(d.as_atom()->name);
  if (t.value && is_bare_var(*t.value)) out.insert(t.value->as_atom()->name);
  for (const MType& f : t.fields) collect_definitions(f, out);
}

class FunctionDeducer {
 public:
  FunctionDeducer(Module& m, Function& f, SymProver& prover) : m_(m), f_(f), prover_(prover) {}

  void run() {
    for (const Param& p : f_.params) collect_definitions(p.type, defined_);
    for (const Param& p : f_.params) {
      require_defined(p.type, p.loc, "in a parameter type");
      define(p.name, p.type, p.loc);
    }
    for (Block& block : f_.blocks)
      for (Binding& b : block.bindings) deduce(block, b);
    auto it = env_.find(f_.result);
    if (it == env_.end())
      throw UserError(f_.result_loc,
                      fmt::format("'{}' is not defined in function '{}'", f_.result, f_.name));
    require_defined(f_.ret, f_.loc, "in the return type");
    f_.return_checks.clear();
    DeduceContext ctx(prover_, f_.result_loc, &f_.return_checks);
    require_assignable(ctx, it->second, f_.ret, "the function's result");
  }

 private:
  void define(const std::string& name, const MType& type, const SourceLoc& loc) {
    // Names are unique in the whole function, arms of an if included (one VM register each).
    if (!all_names_.insert(name).second || !env_.emplace(name, type).second)
      throw UserError(loc, fmt::format("'{}' is already defined in function '{}' (each name is "
                                       "bound once)",
                                       name, f_.name));
  }

  void require_defined(const MType& t, const SourceLoc& loc, const char* where) {
    std::vector<SymVar> vars;
    collect_vars(t, vars);
    for (const SymVar& v : vars)
      if (!defined_.count(v.name()))
        throw UserError(loc, fmt::format("symbolic variable '{}' is used {} before it is defined "
                                         "(a variable is defined where it first stands alone as a "
                                         "dim of a parameter or of a match_cast)",
                                         v.name(), where));
  }

  void require_defined(const SymExpr& e, const SourceLoc& loc,
                       const char* where = "in an attribute") {
    for (const SymVar& v : sym_variables(e))
      if (!defined_.count(v.name()))
        throw UserError(loc, fmt::format("symbolic variable '{}' is used {} before it is defined",
                                         v.name(), where));
  }

  // `actual` (deduced) where `declared` is expected: same kind, dtype and rank; dims equal
  // (proven, or checked at run time).
  void require_assignable(DeduceContext& ctx, const MType& actual, const MType& declared,
                          const std::string& what) {
    if (actual.kind != declared.kind || actual.dtype != declared.dtype ||
        actual.rank != declared.rank || actual.fields.size() != declared.fields.size())
      ctx.fail(fmt::format("{} has type {}, which does not match {}", what, actual.str(),
                           declared.str()));
    for (size_t i = 0; i < actual.fields.size(); ++i)
      require_assignable(ctx, actual.fields[i], declared.fields[i],
                         fmt::format("{} (field {})", what, i));
    if (actual.dims && declared.dims)
      for (size_t i = 0; i < actual.dims->size(); ++i)
        ctx.require_eq(
            (*actual.dims)[i], (*declared.dims)[i],
            fmt::format("dim {} of {} ({}) to be {}", i, what, actual.str(), declared.str()));
  }

  void deduce(Block& block, Binding& b) {
    Call& c = b.call;
    std::vector<MType> in;
    for (const std::string& a : c.args) {
      auto it = env_.find(a);
      if (it == env_.end())
        throw UserError(c.loc, fmt::format("'{}' is not defined before its use here", a));
      in.push_back(it->second);
    }
    b.runtime_checks.clear();
    DeduceContext ctx(prover_, c.loc, &b.runtime_checks);
    for (const auto& [name, value] : c.attrs) {
      if (auto* e = std::get_if<SymExpr>(&value)) require_defined(*e, c.loc);
      if (auto* l = std::get_if<std::vector<SymExpr>>(&value))
        for (const SymExpr& e : *l) require_defined(e, c.loc);
    }
    b.type = deduce_call(ctx, block, c, in);
    define(b.var, b.type, b.loc);
  }

  MType deduce_call(DeduceContext& ctx, const Block& block, Call& c, const std::vector<MType>& in) {
    auto arity = [&](size_t n) {
      if (in.size() != n)
        ctx.fail(fmt::format("'{}' takes {} operand{}, got {}",
                             c.callee.empty() ? std::string(call_kind_name(c.kind)) : c.callee, n,
                             n == 1 ? "" : "s", in.size()));
    };
    switch (c.kind) {
      case CallKind::op:
        return deduce_table_op(ctx, *op_by_name(c.callee), in, c.attrs);
      case CallKind::lib: {
        const LibFunction* lib = lib_function_by_name(c.callee);
        if (!lib) ctx.fail(fmt::format("unknown library function '{}'", c.callee));
        if (!c.attrs.empty()) ctx.fail(fmt::format("'{}' takes no attributes", c.callee));
        return deduce_table_op(ctx, lib->shape_like, in, c.attrs);
      }
      case CallKind::ugraph:
        return deduce_ugraph(ctx, c, in);
      case CallKind::func:
        return deduce_func_call(ctx, c, in);
      case CallKind::if_:
        return deduce_if(ctx, block, c);
      case CallKind::tuple:
        if (in.empty()) ctx.fail("a tuple needs at least one field");
        return MType::tuple(in);
      case CallKind::item: {
        arity(1);
        if (in[0].kind != MTypeKind::tuple)
          ctx.fail(fmt::format("item needs a tuple, not {}", in[0].str()));
        complete_model_attrs(ctx, {{"index", AttrKind::integer, true, int64_t{0}}}, "item",
                             c.attrs);
        auto i = std::get<SymExpr>(c.attrs.at("index")).as_constant();
        if (!i || *i < 0 || *i >= static_cast<int64_t>(in[0].fields.size()))
          ctx.fail(fmt::format("item index must be an integer in [0, {})", in[0].fields.size()));
        return in[0].fields[static_cast<size_t>(*i)];
      }
      case CallKind::match_cast: {
        arity(1);
        if (block.dataflow)
          ctx.fail(
              "match_cast belongs in a plain block, not a dataflow block (dataflow blocks "
              "hold pure bindings only)");
        const MType& t = c.cast_type;
        if (in[0].kind != t.kind || in[0].dtype != t.dtype || in[0].rank != t.rank)
          ctx.fail(fmt::format("match_cast of {} to {}: the kind, dtype and rank must agree",
                               in[0].str(), t.str()));
        collect_definitions(t, defined_);
        require_defined(t, c.loc, "in the match_cast type");
        return t;
      }
    }
    ctx.fail("unknown call");
  }

  MType deduce_ugraph(DeduceContext& ctx, const Call& c, const std::vector<MType>& in) {
    const UGraphDef* def = m_.find_ugraph(c.callee);
    if (!def) ctx.fail(fmt::format("unknown µGraph '{}'", c.callee));
    const Graph& g = *def->graph;
    require_tensors(ctx, in, c.callee);
    if (in.size() != g.inputs.size())
      ctx.fail(
          fmt::format("µGraph '{}' takes {} inputs, got {}", c.callee, g.inputs.size(), in.size()));
    for (size_t i = 0; i < in.size(); ++i) {
      const TensorType& want = g.type(g.inputs[i]);
      if (in[i].dtype != want.dtype || in[i].rank != static_cast<int>(want.shape.size()))
        ctx.fail(fmt::format("operand {} of µGraph '{}' is {}, but its input is {}", i + 1,
                             c.callee, in[i].str(), want.str()));
      if (in[i].dims)
        for (size_t d = 0; d < want.shape.size(); ++d)
          ctx.require_eq((*in[i].dims)[d], want.shape[d],
                         fmt::format("operand {} of µGraph '{}' to match its input {}", i + 1,
                                     c.callee, want.str()));
    }
    std::vector<MType> outs;
    for (ValueId o : g.outputs) {
      std::vector<SymExpr> dims(g.type(o).shape.begin(), g.type(o).shape.end());
      outs.push_back(MType::tensor(g.type(o).dtype, dims));
    }
    return outs.size() == 1 ? outs[0] : MType::tuple(outs);
  }

  // Unifies a callee's parameter type with an argument type: bare variables bind (first time),
  // everything else must agree.
  void unify(DeduceContext& ctx, const MType& param, const MType& arg, SymSubstitution& subst,
             const std::string& what) {
    if (param.kind != arg.kind || param.dtype != arg.dtype || param.rank != arg.rank ||
        param.fields.size() != arg.fields.size())
      ctx.fail(fmt::format("{} is {}, but the parameter is {}", what, arg.str(), param.str()));
    for (size_t i = 0; i < param.fields.size(); ++i)
      unify(ctx, param.fields[i], arg.fields[i], subst, what);
    auto one = [&](const SymExpr& p, const SymExpr& a) {
      if (is_bare_var(p) && !subst.count(p.as_atom()->name)) {
        const SymAtom* v = p.as_atom();
        ctx.require_le(SymExpr(v->lo), a, fmt::format("{}: {} >= {}", what, a.str(), v->lo));
        if (v->hi)
          ctx.require_le(a, SymExpr(*v->hi), fmt::format("{}: {} <= {}", what, a.str(), *v->hi));
        subst.emplace(v->name, a);
        return;
      }
      ctx.require_eq(a, substitute_known(p, subst),
                     fmt::format("{} to match {}", what, param.str()));
    };
    if (param.dims && arg.dims)
      for (size_t i = 0; i < param.dims->size(); ++i) one((*param.dims)[i], (*arg.dims)[i]);
    if (param.value && arg.value) one(*param.value, *arg.value);
  }

  // Substitutes the bound variables; unbound ones stay (the callee defines them later).
  static SymExpr substitute_known(const SymExpr& e, const SymSubstitution& subst) {
    return map_variables(e, [&](const SymVar& v) -> SymExpr {
      auto it = subst.find(v.name());
      return it == subst.end() ? SymExpr(v) : it->second;
    });
  }

  // The callee's return type with bound variables replaced; a dim with a variable the callee
  // defines in its body is unknown to the caller, so that part falls back to rank only.
  static MType instantiate(const MType& t, const SymSubstitution& subst) {
    MType out = t;
    for (MType& f : out.fields) f = instantiate(f, subst);
    auto all_bound = [&](const SymExpr& e) {
      for (const SymVar& v : sym_variables(e))
        if (!subst.count(v.name())) return false;
      return true;
    };
    if (out.dims) {
      bool ok = true;
      for (SymExpr& d : *out.dims) {
        ok = ok && all_bound(d);
        if (ok) d = substitute_known(d, subst);
      }
      if (!ok) out.dims.reset();
    }
    if (out.value && !all_bound(*out.value)) out.value.reset();
    if (out.value) out.value = substitute_known(*out.value, subst);
    return out;
  }

  // Each arm in its own scope (its names and match_cast definitions do not leak); the result is
  // the arms' common type, or their common rank where dims differ.
  MType deduce_if(DeduceContext& ctx, const Block& block, Call& c) {
    if (block.dataflow) ctx.fail("'if' is not allowed in a dataflow block (it is control flow)");
    if (c.branches.size() != 2) ctx.fail("'if' needs a then arm and an else arm");
    require_defined(c.cond.lhs, c.loc, "in the if's condition");
    require_defined(c.cond.rhs, c.loc, "in the if's condition");
    std::vector<MType> results;
    for (IfBranch& arm : c.branches) {
      auto env = env_;
      auto defined = defined_;
      Block scope;  // plain: match_cast and nested ifs are allowed in an arm
      for (Binding& b : arm.bindings) deduce(scope, b);
      auto it = env_.find(arm.result);
      if (it == env_.end())
        throw UserError(arm.result_loc,
                        fmt::format("'{}' is not defined before its use here", arm.result));
      results.push_back(it->second);
      env_ = std::move(env);
      defined_ = std::move(defined);
    }
    const MType &a = results[0], &b = results[1];
    if (a == b) return a;
    bool same_dims = a.dims && b.dims;
    for (size_t i = 0; same_dims && i < a.dims->size() && a.rank == b.rank; ++i)
      same_dims = ctx.provably_eq((*a.dims)[i], (*b.dims)[i]);
    if (a.kind == MTypeKind::tensor && b.kind == MTypeKind::tensor && a.dtype == b.dtype &&
        a.rank == b.rank)
      return same_dims ? a : MType::tensor_of_rank(a.dtype, a.rank);
    ctx.fail(
        fmt::format("the arms of 'if' yield {} and {}; they must agree (tensors may differ "
                    "in dims only)",
                    a.str(), b.str()));
  }

  MType deduce_func_call(DeduceContext& ctx, const Call& c, const std::vector<MType>& in) {
    const Function* callee = m_.find_function(c.callee);
    if (!callee) ctx.fail(fmt::format("unknown function '{}'", c.callee));
    if (in.size() != callee->params.size())
      ctx.fail(fmt::format("function '{}' takes {} arguments, got {}", c.callee,
                           callee->params.size(), in.size()));
    if (!c.attrs.empty()) ctx.fail("a function call takes no attributes");
    SymSubstitution subst;
    for (size_t i = 0; i < in.size(); ++i)
      unify(ctx, callee->params[i].type, in[i], subst,
            fmt::format("argument {} ('{}') of '{}'", i + 1, callee->params[i].name, c.callee));
    return instantiate(callee->ret, subst);
  }

  Module& m_;
  Function& f_;
  SymProver& prover_;
  std::map<std::string, MType> env_;
  std::set<std::string> defined_;
  std::set<std::string> all_names_;
};

}  // namespace

void deduce_module(Module& module, SymProver& prover) {
  std::set<std::string> names;
  for (const UGraphDef& g : module.ugraphs)
    if (!names.insert(g.name).second)
      throw UserError(g.loc, fmt::format("'{}' is already defined in the module", g.name));
  for (const Function& f : module.functions) {
    if (!names.insert(f.name).second)
      throw UserError(f.loc, fmt::format("'{}' is already defined in the module", f.name));
    if (op_by_name(f.name))
      throw UserError(f.loc, fmt::format("function '{}' has the name of an operator", f.name));
  }
  for (Function& f : module.functions) FunctionDeducer(module, f, prover).run();
}

namespace {
void compare_types(const std::vector<Binding>& held, const std::vector<Binding>& deduced) {
  for (size_t i = 0; i < held.size(); ++i) {
    const Binding &x = held[i], &y = deduced[i];
    if (!(x.type == y.type))
      throw UserError(x.loc, fmt::format("'{}' holds type {} but deduction gives {}", x.var,
                                         x.type.str(), y.type.str()));
    for (size_t a = 0; a < x.call.branches.size(); ++a)
      compare_types(x.call.branches[a].bindings, y.call.branches[a].bindings);
  }
}
}  // namespace

void check_module(const Module& module, SymProver& prover) {
  Module copy = module;
  deduce_module(copy, prover);
  for (size_t fi = 0; fi < module.functions.size(); ++fi) {
    const Function &a = module.functions[fi], &b = copy.functions[fi];
    for (size_t bi = 0; bi < a.blocks.size(); ++bi)
      compare_types(a.blocks[bi].bindings, b.blocks[bi].bindings);
  }
}

}  // namespace weft
