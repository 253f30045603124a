// Weight-only bindings computed once by the VM and turned into parameters.
#include "driver/fold_constants.h"

#include <algorithm>
#include <functional>
#include <set>

#include "exec/vm.h"
#include "model/deduce.h"
#include "rewrite/model_apply.h"
#include "rewrite/model_cost.h"

namespace weft {

namespace {

// `f` with its foldable bindings replaced by parameters (values into `folded`); nullopt when
// nothing folds or a value read afterwards is not a tensor.
std::optional<Function> fold_function(const Module& module, const Function& f,
                                      const std::map<std::string, Tensor<double>>& values,
                                      SymProver& prover,
                                      std::map<std::string, Tensor<double>>& folded, int& count) {
  std::set<std::string> constants;
  for (const Param& p : f.params)
    if (values.count(p.name)) constants.insert(p.name);
  if (constants.empty()) return std::nullopt;
  const std::map<std::string, MType> types = value_types(f);
  std::vector<Binding> fold;
  std::set<std::string> folded_vars;
  for (const Block& blk : f.blocks)
    for (const Binding& b : blk.bindings)
      if (folds_at_compile_time(b, types, constants)) {
        constants.insert(b.var);
        folded_vars.insert(b.var);
        fold.push_back(b);
      }
  if (fold.empty()) return std::nullopt;
  // A reshape of a parameter stays as it is (a view at run time: folding it would only hold the
  // weight twice); the folded bindings that read it compute it again inside the fold.
  std::set<std::string> kept;
  for (const Binding& b : fold)
    if (b.call.kind == CallKind::op && b.call.callee == "reshape" && values.count(b.call.args[0]))
      kept.insert(b.var);
  // The folded values something else reads: they become parameters.
  std::vector<std::string> frontier;
  std::set<std::string> in_frontier;
  auto reach = [&](const std::string& v) {
    if (folded_vars.count(v) && !kept.count(v) && in_frontier.insert(v).second)
      frontier.push_back(v);
  };
  for (const Block& blk : f.blocks)
    for (const Binding& b : blk.bindings)
      if (!folded_vars.count(b.var) || kept.count(b.var))
        for (const std::string& v : reads_of(b.call)) reach(v);
  reach(f.result);
  if (frontier.empty()) return std::nullopt;
  for (const std::string& v : frontier)
    if (!types.at(v).is_tensor()) return std::nullopt;
  // Computed by the VM: a function of the parameters the folded bindings read.
  Module tmp;
  tmp.name = module.name;
  tmp.syms = module.syms;
  Function g;
  g.name = "fold";
  std::set<std::string> read;
  for (const Binding& b : fold)
    for (const std::string& v : b.call.args) read.insert(v);
  std::vector<VmValue> args;
  for (const Param& p : f.params)
    if (values.count(p.name) && read.count(p.name)) {
      g.params.push_back(p);
      args.push_back(VmValue{std::make_shared<Tensor<double>>(values.at(p.name))});
    }
  Block body;
  body.dataflow = true;
  body.bindings = fold;
  Binding result;
  result.var = "fold.result";
  result.call.kind = CallKind::tuple;
  result.call.args = frontier;
  std::vector<MType> fields;
  for (const std::string& v : frontier) fields.push_back(types.at(v));
  body.bindings.push_back(result);
  g.blocks.push_back(std::move(body));
  g.result = "fold.result";
  g.ret = MType::tuple(fields);
  tmp.functions.push_back(std::move(g));
  deduce_module(tmp, prover);
  Vm vm(tmp);
  const VmValue out = vm.run("fold", args);
  const VmTuple& tuple = *out.tuple();
  Function h = f;
  for (Block& blk : h.blocks) {
    std::vector<Binding> staying;
    for (Binding& b : blk.bindings)
      if (!folded_vars.count(b.var) || kept.count(b.var)) staying.push_back(std::move(b));
    blk.bindings = std::move(staying);
  }
  for (size_t i = 0; i < frontier.size(); ++i) {
    h.params.push_back(Param{frontier[i], types.at(frontier[i]), f.loc});
    folded[frontier[i]] = *tuple.at(i).tensor();
  }
  count += static_cast<int>(fold.size() - kept.size());
  return h;
}

// The functions calling each function (through if arms too).
std::map<std::string, std::set<std::string>> callers_of(const Module& module) {
  std::map<std::string, std::set<std::string>> out;
  std::function<void(const std::string&, const std::vector<Binding>&)> visit =
      [&](const std::string& caller, const std::vector<Binding>& bindings) {
        for (const Binding& b : bindings) {
          if (b.call.kind == CallKind::func) out[b.call.callee].insert(caller);
          for (const IfBranch& br : b.call.branches) visit(caller, br.bindings);
        }
      };
  for (const Function& f : module.functions)
    for (const Block& blk : f.blocks) visit(f.name, blk.bindings);
  return out;
}

// Calls of `callee` in `bindings` (if arms too) pass `extra` after their arguments.
void pass_on(std::vector<Binding>& bindings, const std::string& callee,
             const std::vector<std::string>& extra) {
  for (Binding& b : bindings) {
    if (b.call.kind == CallKind::func && b.call.callee == callee)
      b.call.args.insert(b.call.args.end(), extra.begin(), extra.end());
    for (IfBranch& br : b.call.branches) pass_on(br.bindings, callee, extra);
  }
}

}  // namespace

FoldResult fold_specialized(const Module& module, const std::set<std::string>& specialized,
                            const std::map<std::string, Tensor<double>>& values,
                            SymProver& prover) {
  FoldResult out;
  out.module = module;
  const auto callers = callers_of(module);
  auto called = [&](const std::string& name) {
    auto it = callers.find(name);
    return it != callers.end() && !it->second.empty();
  };
  for (size_t i = 0; i < out.module.functions.size(); ++i) {
    const Function f = out.module.functions[i];
    if (!specialized.count(f.name)) continue;
    std::set<std::string> outer;
    if (auto it = callers.find(f.name); it != callers.end()) outer = it->second;
    if (std::any_of(outer.begin(), outer.end(), called)) continue;
    std::map<std::string, Tensor<double>> folded;
    int count = 0;
    std::optional<Function> h = fold_function(module, f, values, prover, folded, count);
    if (!h) continue;
    // The new parameters, named after their function: two specializations fold values of the
    // same name at different sizes, and their dispatcher holds both.
    std::map<std::string, std::string> renamed;
    std::vector<std::string> extra;
    std::vector<Param> added;
    for (Param& p : h->params)
      if (folded.count(p.name)) {
        renamed[p.name] = f.name + "." + p.name;
        p.name = renamed[p.name];
        extra.push_back(p.name);
        added.push_back(p);
      }
    for (Block& blk : h->blocks)
      for (Binding& b : blk.bindings) rename_reads(b, renamed);
    if (auto it = renamed.find(h->result); it != renamed.end()) h->result = it->second;
    out.module.functions[i] = std::move(*h);
    for (Function& g : out.module.functions) {
      if (!outer.count(g.name)) continue;
      g.params.insert(g.params.end(), added.begin(), added.end());
      for (Block& blk : g.blocks) pass_on(blk.bindings, f.name, extra);
    }
    for (auto& [name, value] : folded) out.folded.emplace(renamed.at(name), std::move(value));
    out.bindings += count;
  }
  deduce_module(out.module, prover);
  return out;
}

FoldResult fold_constants(const Module& module, const std::map<std::string, Tensor<double>>& values,
                          SymProver& prover) {
  FoldResult out;
  out.module = module;
  std::set<std::string> called;  // a called function keeps its signature
  for (const Function& f : module.functions)
    for (const Block& blk : f.blocks)
      for (const Binding& b : blk.bindings)
        if (b.call.kind == CallKind::func) called.insert(b.call.callee);
  for (Function& f : out.module.functions)
    if (called.count(f.name))
      continue;
    else if (auto h = fold_function(module, f, values, prover, out.folded, out.bindings))
      f = std::move(*h);
  deduce_module(out.module, prover);
  return out;
}

}  // namespace weft
