// Shape specialization: substituted copies of functions, calls redirected callee by callee, and
// the entry functions' dispatch chains.
#include "model/specialize.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "model/deduce.h"
#include "sym/rewrite.h"

namespace weft {
namespace {

SymSubstitution substitution(const SymBinding& binding) {
  SymSubstitution s;
  for (const auto& [name, value] : binding) s.emplace(name, SymExpr(value));
  return s;
}

MType substitute_type(MType t, const SymSubstitution& s) {
  for (MType& f : t.fields) f = substitute_type(f, s);
  if (t.dims)
    for (SymExpr& d : *t.dims) d = substitute(d, s);
  if (t.value) t.value = substitute(*t.value, s);
  return t;
}

void substitute_bindings(std::vector<Binding>& bindings, const SymSubstitution& s) {
  for (Binding& b : bindings) {
    Call& c = b.call;
    for (auto& [name, value] : c.attrs) {
      if (auto* e = std::get_if<SymExpr>(&value))
        *e = substitute(*e, s);
      else if (auto* list = std::get_if<std::vector<SymExpr>>(&value))
        for (SymExpr& e : *list) e = substitute(e, s);
    }
    c.cast_type = substitute_type(c.cast_type, s);
    c.cond.lhs = substitute(c.cond.lhs, s);
    c.cond.rhs = substitute(c.cond.rhs, s);
    for (IfBranch& br : c.branches) substitute_bindings(br.bindings, s);
    b.type = substitute_type(b.type, s);
    b.runtime_checks.clear();
  }
}

void collect_vars(const MType& t, std::set<std::string>& out) {
  for (const MType& f : t.fields) collect_vars(f, out);
  if (t.dims)
    for (const SymExpr& d : *t.dims)
      for (const SymVar& v : sym_variables(d)) out.insert(v.name());
  if (t.value)
    for (const SymVar& v : sym_variables(*t.value)) out.insert(v.name());
}

void collect_calls(const std::vector<Binding>& bindings, std::set<std::string>& called) {
  for (const Binding& b : bindings) {
    if (b.call.kind == CallKind::func) called.insert(b.call.callee);
    for (const IfBranch& br : b.call.branches) collect_calls(br.bindings, called);
  }
}

void collect_types(const std::vector<Binding>& bindings, std::map<std::string, MType>& types) {
  for (const Binding& b : bindings) {
    types[b.var] = b.type;
    for (const IfBranch& br : b.call.branches) collect_types(br.bindings, types);
  }
}

// The callee's variables from an argument's concrete type: false when a value is not a constant
// or two disagree.
bool bind_from(const MType& param, const MType& arg, SymBinding& out) {
  if (param.kind != arg.kind || param.fields.size() != arg.fields.size()) return false;
  for (size_t i = 0; i < param.fields.size(); ++i)
    if (!bind_from(param.fields[i], arg.fields[i], out)) return false;
  auto one = [&](const SymExpr& p, const SymExpr& a) {
    const SymAtom* atom = p.as_atom();
    if (!atom || atom->kind != SymAtomKind::var) return true;  // checked by deduction
    auto c = a.as_constant();
    if (!c) return false;
    auto [it, fresh] = out.emplace(atom->name, *c);
    return fresh || it->second == *c;
  };
  if (param.dims && arg.dims && param.dims->size() == arg.dims->size())
    for (size_t i = 0; i < param.dims->size(); ++i)
      if (!one((*param.dims)[i], (*arg.dims)[i])) return false;
  if (param.value && arg.value && !one(*param.value, *arg.value)) return false;
  return true;
}

std::string binding_key(const SymBinding& binding) {
  std::string key;
  for (const auto& [name, value] : binding)
    key += fmt::format("{}{}{}", key.empty() ? "" : "_", name, value);
  return key.empty() ? "fixed" : key;
}

class Specializer {
 public:
  Specializer(const Module& original, SymProver& prover)
      : original_(original), prover_(prover), module_(original) {
    for (const Function& f : original.functions) names_.insert(f.name);
    for (const UGraphDef& u : original.ugraphs) names_.insert(u.name);
  }

  SpecializeResult run(const std::vector<SymBinding>& bindings) {
    std::set<std::string> called;
    for (const Function& f : original_.functions)
      for (const Block& blk : f.blocks) collect_calls(blk.bindings, called);
    for (const Function& f : original_.functions) {
      if (called.count(f.name)) continue;
      std::vector<std::string> vars = function_variables(f);
      // The dispatch casts a copy's result to the return type, whose variables must then be
      // the parameters' (not ones the body defines with match_cast).
      std::set<std::string> ret_vars;
      collect_vars(f.ret, ret_vars);
      std::vector<std::string> inner;
      for (const std::string& v : ret_vars)
        if (std::find(vars.begin(), vars.end(), v) == vars.end()) inner.push_back(v);
      if (!inner.empty() && !bindings.empty()) {
        result_.skipped.push_back(fmt::format("{}: its return type uses {}, defined in its body",
                                              f.name, fmt::join(inner, ", ")));
        continue;
      }
      for (const SymBinding& b : bindings) {
        SymBinding own;
        std::vector<std::string> missing;
        for (const std::string& v : vars) {
          auto it = b.find(v);
          if (it == b.end())
            missing.push_back(v);
          else
            own[v] = it->second;
        }
        if (!missing.empty()) {
          result_.skipped.push_back(fmt::format("{} at {}: {} not bound", f.name, binding_str(b),
                                                fmt::join(missing, ", ")));
          continue;
        }
        make(f, own, true);
      }
    }
    flush();
    while (!pending_.empty()) redirect();
    for (const Function& f : original_.functions) dispatch(f);
    deduce_module(module_, prover_);
    result_.module = std::move(module_);
    return std::move(result_);
  }

 private:
  std::string unique(std::string name) {
    while (names_.count(name)) name += "_";
    names_.insert(name);
    return name;
  }

  // The copy of `f` at `binding` (made once).
  std::string make(const Function& f, const SymBinding& binding, bool entry) {
    auto key = std::make_pair(f.name, binding_key(binding));
    auto it = made_.find(key);
    if (it != made_.end()) {
      if (entry)
        for (Specialization& s : result_.specializations)
          if (s.name == it->second) s.entry = true;
      return it->second;
    }
    SymSubstitution s = substitution(binding);
    Function copy = f;
    copy.name = unique(f.name + "." + key.second);
    for (Param& p : copy.params) p.type = substitute_type(p.type, s);
    copy.ret = substitute_type(copy.ret, s);
    copy.return_checks.clear();
    for (Block& blk : copy.blocks) substitute_bindings(blk.bindings, s);
    made_[key] = copy.name;
    result_.specializations.push_back({f.name, binding, copy.name, entry});
    pending_.push_back(copy.name);
    fresh_.push_back(std::move(copy));
    return made_[key];
  }

  void flush() {
    for (Function& f : fresh_) module_.functions.push_back(std::move(f));
    fresh_.clear();
  }

  // Deduces the copies made last and sends their calls to copies of the callees.
  void redirect() {
    deduce_module(module_, prover_);
    std::vector<std::string> names = std::move(pending_);
    pending_.clear();
    for (const std::string& name : names) {
      Function* f = nullptr;
      for (Function& g : module_.functions)
        if (g.name == name) f = &g;
      std::map<std::string, MType> types;
      for (const Param& p : f->params) types[p.name] = p.type;
      for (const Block& blk : f->blocks) collect_types(blk.bindings, types);
      for (Block& blk : f->blocks) redirect_calls(blk.bindings, types);
    }
    flush();
  }

  void redirect_calls(std::vector<Binding>& bindings, const std::map<std::string, MType>& types) {
    for (Binding& b : bindings) {
      for (IfBranch& br : b.call.branches) redirect_calls(br.bindings, types);
      if (b.call.kind != CallKind::func) continue;
      const Function* callee = original_.find_function(b.call.callee);
      if (!callee) continue;  // already a copy
      SymBinding values;
      bool ok = callee->params.size() == b.call.args.size();
      for (size_t i = 0; ok && i < b.call.args.size(); ++i) {
        auto t = types.find(b.call.args[i]);
        ok = t != types.end() && bind_from(callee->params[i].type, t->second, values);
      }
      if (ok)
        for (const std::string& v : function_variables(*callee)) ok = ok && values.count(v);
      if (ok) b.call.callee = make(*callee, values, false);
    }
  }

  // `fn`'s body replaced by the dispatch over its entry copies, the body kept as FN.generic.
  void dispatch(const Function& fn) {
    std::vector<const Specialization*> specs;
    for (const Specialization& s : result_.specializations)
      if (s.entry && s.function == fn.name) specs.push_back(&s);
    if (specs.empty()) return;
    Function generic = fn;
    generic.name = unique(fn.name + ".generic");
    std::vector<std::string> vars = function_variables(fn);
    std::set<std::string> locals;
    for (const Param& p : fn.params) locals.insert(p.name);
    auto local = [&](const std::string& base) {
      std::string name = base;
      for (int k = 1; locals.count(name); ++k) name = fmt::format("{}{}", base, k);
      locals.insert(name);
      return name;
    };
    std::vector<std::string> args;
    for (const Param& p : fn.params) args.push_back(p.name);
    auto call = [&](const std::string& var, const std::string& callee) {
      Binding b;
      b.var = var;
      b.loc = b.call.loc = fn.loc;
      b.call.kind = CallKind::func;
      b.call.callee = callee;
      b.call.args = args;
      return b;
    };
    // Names are unique in the whole function, arms included.
    auto generic_arm = [&] {
      const std::string generic_var = local("generic");
      IfBranch arm;
      arm.bindings.push_back(call(generic_var, generic.name));
      arm.result = generic_var;
      return arm;
    };
    int ifs = 0;
    std::function<IfBranch(const std::vector<const Specialization*>&, size_t)> build =
        [&](const std::vector<const Specialization*>& subset, size_t depth) -> IfBranch {
      if (depth == vars.size()) {
        // Deduction does not assume the conditions that led here, so the arguments are cast to
        // the copy's parameter types (checked at run time) before the call.
        IfBranch arm;
        const std::string spec_var = local("specialized");
        const Function* copy = nullptr;
        for (const Function& g : module_.functions)
          if (g.name == subset.front()->name) copy = &g;
        Binding spec_call = call(spec_var, copy->name);
        for (size_t i = 0; i < fn.params.size(); ++i) {
          if (copy->params[i].type == fn.params[i].type) continue;
          Binding cast;
          cast.var = local(fn.params[i].name + ".fixed");
          cast.loc = cast.call.loc = fn.loc;
          cast.call.kind = CallKind::match_cast;
          cast.call.args = {fn.params[i].name};
          cast.call.cast_type = copy->params[i].type;
          spec_call.call.args[i] = cast.var;
          arm.bindings.push_back(std::move(cast));
        }
        arm.bindings.push_back(std::move(spec_call));
        arm.result = spec_var;
        {
          const std::string cast_var = local("result");
          Binding cast;
          cast.var = cast_var;
          cast.loc = cast.call.loc = fn.loc;
          cast.call.kind = CallKind::match_cast;
          cast.call.args = {spec_var};
          cast.call.cast_type = fn.ret;
          arm.bindings.push_back(std::move(cast));
          arm.result = cast_var;
        }
        return arm;
      }
      std::map<int64_t, std::vector<const Specialization*>> groups;
      for (const Specialization* s : subset) groups[s->binding.at(vars[depth])].push_back(s);
      IfBranch chain = generic_arm();
      for (auto g = groups.rbegin(); g != groups.rend(); ++g) {
        Binding test;
        test.var = local(fmt::format("dispatch{}", ifs++));
        test.loc = test.call.loc = fn.loc;
        test.call.kind = CallKind::if_;
        test.call.cond.rel = SymRel::eq;
        test.call.cond.lhs = SymExpr(*original_.syms.find(vars[depth]));
        test.call.cond.rhs = SymExpr(g->first);
        test.call.branches = {build(g->second, depth + 1), std::move(chain)};
        chain = IfBranch{};
        chain.result = test.var;
        chain.bindings.push_back(std::move(test));
      }
      return chain;
    };
    IfBranch body = build(specs, 0);
    Function* target = nullptr;
    for (Function& g : module_.functions)
      if (g.name == fn.name) target = &g;
    target->blocks.clear();
    target->blocks.push_back(Block{false, std::move(body.bindings), fn.loc});
    target->result = body.result;
    target->return_checks.clear();
    module_.functions.push_back(std::move(generic));
  }

  const Module& original_;
  SymProver& prover_;
  Module module_;
  SpecializeResult result_;
  std::set<std::string> names_;
  std::map<std::pair<std::string, std::string>, std::string> made_;
  std::vector<std::string> pending_;
  std::vector<Function> fresh_;
};

}  // namespace

std::vector<std::string> function_variables(const Function& f) {
  std::set<std::string> vars;
  for (const Param& p : f.params) collect_vars(p.type, vars);
  return {vars.begin(), vars.end()};
}

SpecializeResult specialize_module(const Module& module, const std::vector<SymBinding>& bindings,
                                   SymProver& prover) {
  return Specializer(module, prover).run(bindings);
}

}  // namespace weft
