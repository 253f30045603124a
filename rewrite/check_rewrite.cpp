// The changed part of a rewritten function, checked against the original's by finite field.
#include "rewrite/check_rewrite.h"

#include <fmt/format.h>

#include <cmath>
#include <set>

#include "model/evaluate_at.h"
#include "rewrite/model_apply.h"

namespace weft {

namespace {

std::vector<const Binding*> top_level(const Function& f) {
  std::vector<const Binding*> out;
  for (const Block& blk : f.blocks)
    for (const Binding& b : blk.bindings) out.push_back(&b);
  return out;
}

// The bindings `part` of `f` as a kernel program over `inputs` returning `outputs`; a UserError
// naming what cannot be a µGraph.
Graph part_graph(const Function& f, const std::vector<const Binding*>& part,
                 const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                 const SymBinding& at) {
  const std::map<std::string, MType> types = value_types(f);
  GraphBuilder gb(Level::kernel, "part");
  std::map<std::string, std::vector<ValueId>> ids;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto t = tensor_type_at(types.at(inputs[i]), at);
    if (!t) throw UserError({}, fmt::format("'{}' is not a tensor of known shape", inputs[i]));
    ids[inputs[i]] = {gb.add_input(fmt::format("x{}", i), *t)};
  }
  for (const Binding* b : part) {
    if (b->call.kind == CallKind::item) {
      const int64_t index = std::get<SymExpr>(b->call.attrs.at("index")).as_constant().value();
      ids[b->var] = {ids.at(b->call.args.at(0)).at(static_cast<size_t>(index))};
      continue;
    }
    auto kind = b->call.kind == CallKind::op ? op_by_name(b->call.callee) : std::nullopt;
    if (!kind) throw UserError(b->loc, fmt::format("'{}' is not a table operator", b->var));
    std::vector<ValueId> args;
    for (const std::string& a : b->call.args) args.push_back(ids.at(a).at(0));
    ids[b->var] = gb.add_op(*kind, args, evaluate_attrs(b->call.attrs, at, b->loc));
  }
  for (const std::string& o : outputs) gb.add_output(ids.at(o).at(0));
  return std::move(gb).finish();
}

// `widen`: unchanged table operators the new part reads join both parts (see below).
RewriteCheck check_parts(const Function& original, const Function& rewritten,
                         const std::map<std::string, std::string>& renamed, const SymBinding& at,
                         uint64_t seed, bool widen) {
  RewriteCheck out;
  std::map<std::string, Binding> before;  // the original's bindings, reads renamed
  for (const Binding* b : top_level(original)) {
    Binding r = *b;
    rename_reads(r, renamed);
    before[b->var] = std::move(r);
  }
  std::set<std::string> now_defined;
  std::vector<const Binding*> added;
  for (const Binding* b : top_level(rewritten)) {
    now_defined.insert(b->var);
    auto it = before.find(b->var);
    if (it == before.end() || !(it->second.call == b->call) || !(it->second.type == b->type))
      added.push_back(b);
  }
  std::set<std::string> removed_vars, added_vars;
  for (const Binding* a : added) added_vars.insert(a->var);
  // An unchanged table operator the new part reads (a rewrite may reuse a value the function
  // already computes) is a live-in of both parts, free to take any value: a stronger check than
  // needed, which may fail where the value's relation to the inputs matters. Widened, it joins
  // both parts instead (which may take them outside what the finite-field test decides).
  std::map<std::string, const Binding*> kept;
  for (const Binding* b : top_level(rewritten))
    if (widen && !added_vars.count(b->var) &&
        (b->call.kind == CallKind::item ||
         (b->call.kind == CallKind::op && op_by_name(b->call.callee))))
      kept[b->var] = b;
  for (std::vector<const Binding*> todo = added; !todo.empty();) {
    const Binding* b = todo.back();
    todo.pop_back();
    for (const std::string& v : reads_of(b->call))
      if (auto it = kept.find(v); it != kept.end() && added_vars.insert(v).second)
        todo.push_back(it->second);
  }
  added.clear();
  for (const Binding* b : top_level(rewritten))
    if (added_vars.count(b->var)) added.push_back(b);
  std::vector<const Binding*> removed;
  for (const Binding* b : top_level(original))
    if (!now_defined.count(b->var) || added_vars.count(b->var)) {
      removed.push_back(b);
      removed_vars.insert(b->var);
    }
  out.changed = static_cast<int>(removed.size());
  if (removed.empty() && added.empty()) {
    out.verdict = Verdict::equivalent;
    out.bound = 0;
    return out;
  }
  // Live-outs: values of the removed part read outside it (as the original reads them).
  std::vector<std::string> outputs_before, outputs_after;
  std::set<std::string> out_set;
  for (const Binding* b : top_level(original)) {
    if (removed_vars.count(b->var)) continue;
    for (const std::string& v : reads_of(b->call))
      if (removed_vars.count(v) && out_set.insert(v).second) outputs_before.push_back(v);
  }
  if (removed_vars.count(original.result) && out_set.insert(original.result).second)
    outputs_before.push_back(original.result);
  for (const std::string& v : outputs_before) {
    auto it = renamed.find(v);
    outputs_after.push_back(it == renamed.end() ? v : it->second);
  }
  std::set<std::string> inputs;
  for (const Binding* b : removed)
    for (const std::string& v : reads_of(b->call))
      if (!removed_vars.count(v)) inputs.insert(v);
  for (const Binding* b : added)
    for (const std::string& v : reads_of(b->call))
      if (!added_vars.count(v)) inputs.insert(v);
  for (const std::string& v : outputs_after)
    if (!added_vars.count(v)) inputs.insert(v);
  const std::vector<std::string> live_ins(inputs.begin(), inputs.end());
  try {
    const Graph a = part_graph(original, removed, live_ins, outputs_before, at);
    const Graph b = part_graph(rewritten, added, live_ins, outputs_after, at);
    VerifyOptions options;
    options.seed = seed;
    options.threads = 1;
    options.float_check = false;
    const VerifyResult r = EquivalenceChecker(a, options).check(b);
    out.verdict = r.verdict;
    out.bound = r.bound;
    if (r.verdict == Verdict::not_equivalent)
      out.message =
          fmt::format("output '{}' differs", outputs_before.at(static_cast<size_t>(r.output)));
    else if (r.verdict != Verdict::equivalent)
      out.message = r.message;
  } catch (const UserError& e) {
    out.verdict = Verdict::error;
    out.message = e.message();
  }
  return out;
}

}  // namespace

RewriteCheck check_rewritten_function(const Function& original, const Function& rewritten,
                                      const std::map<std::string, std::string>& renamed,
                                      const SymBinding& at, uint64_t seed) {
  RewriteCheck out = check_parts(original, rewritten, renamed, at, seed, false);
  if (out.verdict == Verdict::equivalent) return out;
  RewriteCheck wide = check_parts(original, rewritten, renamed, at, seed, true);
  return wide.verdict == Verdict::equivalent ? wide : out;
}

}  // namespace weft
