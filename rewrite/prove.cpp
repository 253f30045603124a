// The Z3 encoding of rules and axioms. One context per proof keeps proofs independent (and
// thread-safe: Z3 contexts are not shared between threads).
#include "rewrite/prove.h"

#include <fmt/format.h>
#include <z3++.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/error.h"

namespace weft {
namespace {

struct Unsupported {
  std::string why;
};

// An operator with its attribute values: one uninterpreted function (per result).
std::string function_key(const Op& op) {
  std::string name = op_kind_name(op.kind);
  for (const auto& [attr, value] : op.attrs.entries()) {
    if (const auto* i = std::get_if<int64_t>(&value))
      name += fmt::format(" {}={}", attr, *i);
    else if (const auto* q = std::get_if<Rational>(&value))
      name += fmt::format(" {}={}", attr, q->str());
    else
      throw Unsupported{fmt::format("{} has a list attribute", op_kind_name(op.kind))};
  }
  return name;
}

std::set<std::string> function_keys(const Graph& side) {
  std::set<std::string> keys;
  for (const Op& op : side.ops) keys.insert(function_key(op));
  return keys;
}

class Encoder {
 public:
  explicit Encoder(z3::context& ctx)
      : ctx_(ctx),
        tensor_(ctx.uninterpreted_sort("Tensor")),
        dim_(ctx.function("dim", ctx.int_sort(), tensor_, ctx.int_sort())) {}

  z3::sort tensor() const { return tensor_; }
  z3::expr dim(int i, const z3::expr& t) const { return dim_(ctx_.int_val(i), t); }

  // The outputs of `side` (a kernel program) with its inputs bound to `inputs` (by position).
  std::vector<z3::expr> outputs(const Graph& side, const std::vector<z3::expr>& inputs) {
    std::map<ValueId, z3::expr> env;
    for (size_t i = 0; i < side.inputs.size(); ++i) env.emplace(side.inputs[i], inputs[i]);
    for (const Op& op : side.ops) {
      std::vector<z3::expr> args;
      for (ValueId v : op.inputs) args.push_back(env.at(v));
      for (size_t r = 0; r < op.outputs.size(); ++r) {
        z3::func_decl f = function(op, r);
        z3::expr_vector a(ctx_);
        for (const z3::expr& x : args) a.push_back(x);
        env.emplace(op.outputs[r], f(a));
      }
    }
    std::vector<z3::expr> out;
    for (ValueId v : side.outputs) out.push_back(env.at(v));
    return out;
  }

  // Every shape axiom of the functions made so far (after the rule and axioms are encoded).
  std::vector<z3::expr> shape_axioms() const { return shape_axioms_; }

 private:
  // One uninterpreted function per operator, attribute values and result: attributes are part
  // of the name, so every function maps tensors to a tensor.
  z3::func_decl function(const Op& op, size_t result) {
    std::string name = function_key(op);
    if (op.outputs.size() > 1) name += fmt::format(" #{}", result);
    auto it = functions_.find(name);
    if (it != functions_.end()) return it->second;
    z3::sort_vector domain(ctx_);
    for (size_t i = 0; i < op.inputs.size(); ++i) domain.push_back(tensor_);
    z3::func_decl f = ctx_.function(name.c_str(), domain, tensor_);
    functions_.emplace(name, f);
    add_shape_axioms(op, f);
    return f;
  }

  // dim(i, f(x, ...)) for rank-2 results, from the operator's shape rule.
  // Every result of an operator has the same dims (split's parts are equal).
  void add_shape_axioms(const Op& op, const z3::func_decl& f) {
    z3::expr_vector xs(ctx_);
    for (size_t i = 0; i < op.inputs.size(); ++i)
      xs.push_back(ctx_.constant(fmt::format("x{}", i).c_str(), tensor_));
    const z3::expr app = f(xs);
    auto same_as = [&](int i, int operand) { return dim(i, app) == dim(i, xs[operand]); };
    std::vector<z3::expr> facts;
    const int d = static_cast<int>(op.attrs.get_int_or("dim", 0));
    switch (class_of(op.kind)) {
      case OpClass::unary:
        facts = {same_as(0, 0), same_as(1, 0)};
        break;
      case OpClass::binary:
        for (int i = 0; i < 2; ++i)
          facts.push_back(dim(i, app) == z3::ite(dim(i, xs[0]) == 1, dim(i, xs[1]), dim(i, xs[0])));
        break;
      case OpClass::matmul:
        facts = {same_as(0, 0), dim(1, app) == dim(1, xs[1])};
        break;
      case OpClass::reduction:
        facts = {dim(d, app) == ctx_.int_val(op.attrs.get_int_or("to", 1)), same_as(1 - d, 0)};
        break;
      case OpClass::movement:
        if (op.kind == OpKind::concat) {
          z3::expr total = dim(d, xs[0]);
          for (unsigned i = 1; i < xs.size(); ++i) total = total + dim(d, xs[i]);
          facts = {dim(d, app) == total, same_as(1 - d, 0)};
        } else if (op.kind == OpKind::split) {
          facts = {dim(d, app) * ctx_.int_val(op.attrs.get_int("parts")) == dim(d, xs[0]),
                   same_as(1 - d, 0)};
        }
        break;
      case OpClass::composite:
      case OpClass::structure:
      case OpClass::hierarchy:
      case OpClass::model:
        break;
    }
    for (const z3::expr& fact : facts) shape_axioms_.push_back(z3::forall(xs, fact));
  }

  z3::context& ctx_;
  z3::sort tensor_;
  z3::func_decl dim_;
  std::map<std::string, z3::func_decl> functions_;
  std::vector<z3::expr> shape_axioms_;
};

// Instantiated sides of a rule: the statements are read from programs at some sizes (which the
// encoding forgets); only rank-2 tensors are modelled.
std::pair<Graph, Graph> read_sides(const Rule& rule) {
  const auto sizes = instantiation(rule, rule_reading_sizes());
  for (const RuleInput& in : rule.inputs)
    if (in.dims.size() != 2)
      throw Unsupported{
          fmt::format("input {} has rank {}; the prover models rank 2", in.name, in.dims.size())};
  return {instantiate(rule, false, sizes), instantiate(rule, true, sizes)};
}

// ∀ inputs: (dims the inputs share are equal) ⇒ source outputs = target outputs.
z3::expr axiom_formula(z3::context& ctx, Encoder& enc, const Rule& axiom) {
  const auto [source, target] = read_sides(axiom);
  z3::expr_vector vars(ctx);
  std::vector<z3::expr> inputs;
  for (const RuleInput& in : axiom.inputs) {
    inputs.push_back(ctx.constant(in.name.c_str(), enc.tensor()));
    vars.push_back(inputs.back());
  }
  z3::expr guard = ctx.bool_val(true);
  std::map<std::string, z3::expr> first;  // dim variable → its first occurrence
  for (size_t i = 0; i < axiom.inputs.size(); ++i)
    for (size_t d = 0; d < axiom.inputs[i].dims.size(); ++d) {
      const z3::expr here = enc.dim(static_cast<int>(d), inputs[i]);
      auto [it, fresh] = first.emplace(axiom.inputs[i].dims[d], here);
      if (!fresh) guard = guard && (it->second == here);
    }
  const std::vector<z3::expr> s = enc.outputs(source, inputs);
  const std::vector<z3::expr> t = enc.outputs(target, inputs);
  z3::expr eq = ctx.bool_val(true);
  for (size_t o = 0; o < s.size(); ++o) eq = eq && (s[o] == t[o]);
  return z3::forall(vars, z3::implies(guard, eq));
}

// The axioms a proof can reach: starting from the rule's functions, an axiom joins when one of
// its sides uses only functions already reachable (E-matching can then fire it), and brings the
// functions of its other side. Fewer axioms keep Z3's search small; the proof stays sound.
std::vector<const Rule*> reachable_axioms(const std::set<std::string>& rule_functions,
                                          const std::vector<Rule>& axioms) {
  std::vector<std::pair<std::set<std::string>, std::set<std::string>>> sides;
  for (const Rule& a : axioms) {
    const auto [s, t] = read_sides(a);
    sides.emplace_back(function_keys(s), function_keys(t));
  }
  std::set<std::string> reach = rule_functions;
  std::vector<bool> chosen(axioms.size(), false);
  auto within = [&](const std::set<std::string>& keys) {
    return !keys.empty() && std::includes(reach.begin(), reach.end(), keys.begin(), keys.end());
  };
  for (bool grew = true; grew;) {
    grew = false;
    for (size_t i = 0; i < axioms.size(); ++i) {
      if (chosen[i] || !(within(sides[i].first) || within(sides[i].second))) continue;
      chosen[i] = grew = true;
      reach.insert(sides[i].first.begin(), sides[i].first.end());
      reach.insert(sides[i].second.begin(), sides[i].second.end());
    }
  }
  std::vector<const Rule*> out;
  for (size_t i = 0; i < axioms.size(); ++i)
    if (chosen[i]) out.push_back(&axioms[i]);
  return out;
}

}  // namespace

const char* proof_verdict_name(ProofVerdict v) {
  switch (v) {
    case ProofVerdict::proven:
      return "proven";
    case ProofVerdict::not_proven:
      return "not proven";
    case ProofVerdict::unsupported:
      return "unsupported";
  }
  return "?";
}

ProofResult prove_rule(const Rule& rule, const std::vector<Rule>& axioms,
                       const ProveOptions& options) {
  try {
    z3::context ctx;
    Encoder enc(ctx);
    z3::solver solver(ctx);
    z3::params params(ctx);
    params.set("rlimit", static_cast<unsigned>(std::min<uint64_t>(options.rlimit, UINT32_MAX)));
    solver.set(params);
    // The rule at fresh tensors whose dims are the rule's variables (each > 1).
    const auto [source, target] = read_sides(rule);
    std::set<std::string> rule_functions = function_keys(source);
    for (const std::string& k : function_keys(target)) rule_functions.insert(k);
    for (const Rule* a : reachable_axioms(rule_functions, axioms))
      solver.add(axiom_formula(ctx, enc, *a));
    std::vector<z3::expr> inputs;
    std::map<std::string, z3::expr> vars;
    for (const RuleInput& in : rule.inputs) {
      inputs.push_back(ctx.constant(("in " + in.name).c_str(), enc.tensor()));
      for (size_t d = 0; d < in.dims.size(); ++d) {
        auto it = vars.find(in.dims[d]);
        if (it == vars.end())
          it = vars.emplace(in.dims[d], ctx.int_const(("var " + in.dims[d]).c_str())).first;
        solver.add(enc.dim(static_cast<int>(d), inputs.back()) == it->second);
        solver.add(it->second > 1);
      }
    }
    const std::vector<z3::expr> s = enc.outputs(source, inputs);
    const std::vector<z3::expr> t = enc.outputs(target, inputs);
    z3::expr all_equal = ctx.bool_val(true);
    for (size_t o = 0; o < s.size(); ++o) all_equal = all_equal && (s[o] == t[o]);
    solver.add(!all_equal);
    for (const z3::expr& a : enc.shape_axioms()) solver.add(a);
    switch (solver.check()) {
      case z3::unsat:
        return {ProofVerdict::proven, ""};
      case z3::sat:
        return {ProofVerdict::not_proven, "Z3 found the axioms consistent with the rule failing"};
      case z3::unknown:
        return {ProofVerdict::not_proven, fmt::format("Z3 gave up ({})", solver.reason_unknown())};
    }
  } catch (const Unsupported& u) {
    return {ProofVerdict::unsupported, u.why};
  } catch (const z3::exception& e) {
    return {ProofVerdict::not_proven, fmt::format("Z3: {}", e.msg())};
  }
  return {ProofVerdict::not_proven, "?"};
}

}  // namespace weft
