// Driver: a compiled model's function as a decode step with its KV cache, by the exporters' names.
#include "driver/decoder_signature.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/error.h"
#include "exec/run_io.h"
#include "sym/evaluate.h"

namespace weft {

Shape DecoderCache::shape_of(int64_t length) const {
  Shape s = shape;
  s.at(static_cast<size_t>(axis)) = length;
  return s;
}

namespace {

constexpr const char* kPastPrefixes[] = {"past_key_values.", "past."};
constexpr const char* kHowToExport =
    "export the decoder with its cache as Hugging Face exporters do: inputs input_ids, "
    "attention_mask, position_ids and past_key_values.L.key|value, outputs logits and "
    "present.L.key|value";

std::optional<int64_t> static_value(const SymExpr& e) {
  return try_evaluate(e, SymBinding{}).value;
}

// The tensor type of a parameter or result, with its dims; UserError otherwise.
const std::vector<SymExpr>& dims_of(const MType& t, const std::string& name,
                                    const std::string& dir) {
  if (!t.is_tensor() || !t.dims)
    throw UserError(fmt::format("{}: {} is {}, not a tensor of known dims ({})", dir, name, t.str(),
                                kHowToExport));
  return *t.dims;
}

// The function's caller inputs and results by name, with their types.
struct Signature {
  const Function* fn = nullptr;
  std::vector<std::string> params;  // every parameter in order, weights included
  std::map<std::string, const MType*> inputs, outputs;
  std::vector<std::string> results;  // in order
  std::string where;
};

Signature signature_of(const CompiledModelDir& dir, const std::string& function) {
  Signature g;
  g.fn = &function_to_run(dir.compiled(), function, SourceLoc{dir.dir()});
  g.params = dir.parameter_names(function);
  const std::vector<std::string> callers = dir.input_names(function);
  for (size_t i = 0; i < g.fn->params.size(); ++i)
    if (std::find(callers.begin(), callers.end(), g.params[i]) != callers.end())
      g.inputs[g.params[i]] = &g.fn->params[i].type;
  if (g.fn->ret.kind == MTypeKind::tuple) {
    for (size_t i = 0; i < g.fn->ret.fields.size(); ++i) {
      g.results.push_back(dir.output_name(fmt::format("result.{}", i)));
      g.outputs[g.results.back()] = &g.fn->ret.fields[i];
    }
  } else {
    g.results.push_back(dir.output_name("result"));
    g.outputs[g.results.back()] = &g.fn->ret;
  }
  g.where = fmt::format("{} ({})", dir.dir(), function);
  return g;
}

DecoderSignature masked_signature(const Signature& g) {
  const auto& inputs = g.inputs;
  const auto& outputs = g.outputs;
  const std::string& where = g.where;
  auto need = [&](const std::map<std::string, const MType*>& in, const std::string& name,
                  const char* what) -> const MType& {
    auto it = in.find(name);
    if (it == in.end())
      throw UserError(fmt::format("{} is not a decoder with its KV cache: it has no {} {} ({})",
                                  where, what, name, kHowToExport));
    return *it->second;
  };

  DecoderSignature s;
  s.input_ids = "input_ids";
  s.attention_mask = "attention_mask";
  s.position_ids = "position_ids";
  s.logits = "logits";
  const std::vector<SymExpr>& ids = dims_of(need(inputs, s.input_ids, "input"), s.input_ids, where);
  dims_of(need(inputs, s.attention_mask, "input"), s.attention_mask, where);
  if (!inputs.count(s.position_ids))
    throw UserError(fmt::format(
        "{} takes no position_ids: weft decodes with cache slots that are masked until filled, so "
        "the tokens' positions must be given rather than derived from the cache's length ({})",
        where, kHowToExport));
  const std::vector<SymExpr>& logits = dims_of(need(outputs, s.logits, "output"), s.logits, where);
  if (!logits.empty()) s.vocab = static_value(logits.back());
  if (ids.size() != 2)
    throw UserError(fmt::format("{}: input_ids has {} dims, not [batch, seq]", where, ids.size()));
  s.batch = static_value(ids[0]).value_or(1);
  s.fixed_seq = static_value(ids[1]);
  if (s.fixed_seq && *s.fixed_seq != 1)
    throw UserError(fmt::format(
        "{}: input_ids has the fixed shape [{}, {}]: a decode step takes one new token (export "
        "with a dynamic sequence, or with seq 1)",
        where, s.batch, *s.fixed_seq));

  const std::set<std::string> roles = {s.input_ids, s.attention_mask, s.position_ids};
  std::vector<std::string> unexpected;
  for (const auto& [name, type] : inputs) {
    if (roles.count(name)) continue;
    std::string suffix;
    for (const char* prefix : kPastPrefixes)
      if (name.starts_with(prefix)) suffix = name.substr(std::string_view(prefix).size());
    if (suffix.empty()) {
      unexpected.push_back(name);
      continue;
    }
    DecoderCache c;
    c.past = name;
    c.present = "present." + suffix;
    const std::vector<SymExpr>& past = dims_of(*type, name, where);
    const std::vector<SymExpr>& present =
        dims_of(need(outputs, c.present, "output"), c.present, where);
    if (past.size() != present.size())
      throw UserError(fmt::format("{}: {} has {} dims and {} has {}", where, name, past.size(),
                                  c.present, present.size()));
    std::vector<int> symbolic, differing;
    for (size_t a = 0; a < past.size(); ++a) {
      const std::optional<int64_t> v = static_value(past[a]);
      if (a == 0 && (!v || s.batch == *v)) {
        c.shape.push_back(s.batch);  // the batch axis, as exporters put it first
        continue;
      }
      c.shape.push_back(v.value_or(0));
      if (!v) symbolic.push_back(static_cast<int>(a));
      if (!(past[a] == present[a])) differing.push_back(static_cast<int>(a));
    }
    const std::vector<int>& axes = symbolic.empty() ? differing : symbolic;
    if (axes.size() != 1)
      throw UserError(fmt::format(
          "{}: cannot tell the cache axis of {} ({} against {} of {}): one dimension must be the "
          "cache's length",
          where, name, type->str(), outputs.at(c.present)->str(), c.present));
    c.axis = axes[0];
    if (symbolic.empty()) {
      const int64_t length = *static_value(past[static_cast<size_t>(c.axis)]);
      if (s.fixed_cache && *s.fixed_cache != length)
        throw UserError(fmt::format("{}: the caches have fixed lengths {} and {}", where,
                                    *s.fixed_cache, length));
      s.fixed_cache = length;
    }
    c.shape[static_cast<size_t>(c.axis)] = 0;
    s.caches.push_back(std::move(c));
  }
  s.weights = std::move(unexpected);
  if (s.caches.empty())
    throw UserError(
        fmt::format("{} is not a decoder with its KV cache: no past_key_values inputs ({})", where,
                    kHowToExport));
  return s;
}

// Positional: the integer parameter's symbol p is the cache's length; caches are the tensor
// parameters with a dim p, paired in order with the results after the logits.
DecoderSignature positional_signature(const CompiledModelDir& dir, const Signature& g,
                                      const std::string& function, std::string prefill) {
  const std::string& where = g.where;
  DecoderSignature s;
  s.kind = DecoderKind::positional;
  const Param* length = nullptr;
  for (const Param& p : g.fn->params)
    if (p.type.kind == MTypeKind::integer && p.type.value) {
      if (length)
        throw UserError(
            fmt::format("{}: integer parameters {} and {}: a decode step takes one, "
                        "the cache's length",
                        where, length->name, p.name));
      length = &p;
    }
  if (!length)
    throw UserError(fmt::format(
        "{} is not a decoder with its KV cache: no attention_mask and past_key_values inputs "
        "({}), and no integer parameter int(p) giving a cache's length p",
        where, kHowToExport));
  s.position_ids = length->name;
  const SymExpr& p = *length->type.value;
  std::vector<const Param*> caches;
  for (const Param& q : g.fn->params) {
    if (!q.type.is_tensor() || !q.type.dims) continue;
    if (s.input_ids.empty() && q.type.dims->size() == 2) {
      s.input_ids = q.name;
      continue;
    }
    if (std::find(q.type.dims->begin(), q.type.dims->end(), p) != q.type.dims->end())
      caches.push_back(&q);
  }
  if (s.input_ids.empty())
    throw UserError(fmt::format("{}: no [batch, seq] tensor of token ids", where));
  if (caches.empty() || g.results.size() != caches.size() + 1)
    throw UserError(fmt::format(
        "{}: {} parameters have the cache's length {} as a dim and it has {} results: a decode "
        "step returns the logits and then each cache grown by the new positions, in order",
        where, caches.size(), p.str(), g.results.size()));
  s.logits = g.results[0];
  const std::vector<SymExpr>& logits = dims_of(*g.outputs.at(s.logits), s.logits, where);
  if (!logits.empty()) s.vocab = static_value(logits.back());
  const std::vector<SymExpr>& ids = *g.inputs.at(s.input_ids)->dims;
  s.batch = static_value(ids[0]).value_or(1);
  for (size_t i = 0; i < caches.size(); ++i) {
    DecoderCache c;
    c.past = caches[i]->name;
    c.present = g.results[i + 1];
    const std::vector<SymExpr>& past = *caches[i]->type.dims;
    const std::vector<SymExpr>& present = dims_of(*g.outputs.at(c.present), c.present, where);
    if (past.size() != present.size())
      throw UserError(fmt::format("{}: {} has {} dims and result {} has {}", where, c.past,
                                  past.size(), i + 1, present.size()));
    for (size_t a = 0; a < past.size(); ++a) {
      if (past[a] == p) {
        c.axis = static_cast<int>(a);
        c.shape.push_back(0);
      } else if (a == 0 && past[a] == ids[0]) {
        c.shape.push_back(s.batch);
      } else if (std::optional<int64_t> v = static_value(past[a])) {
        c.shape.push_back(*v);
      } else {
        throw UserError(
            fmt::format("{}: dim {} of {} ({}) is neither the batch, the cache's "
                        "length nor a number",
                        where, a, c.past, past[a].str()));
      }
    }
    s.caches.push_back(std::move(c));
  }
  std::set<std::string> roles = {s.input_ids};
  for (const DecoderCache& c : s.caches) roles.insert(c.past);
  for (const auto& [name, type] : g.inputs)
    if (!roles.count(name) && type->kind != MTypeKind::integer) s.weights.push_back(name);

  if (prefill.empty()) prefill = "prefill";
  if (!dir.compiled().find_function(prefill))
    throw UserError(fmt::format(
        "{} takes its cache's length as the integer {} and no attention mask, so the prompt needs "
        "a function of its own: no function '{}' (give the one that runs the prompt with "
        "--prefill F: the step's parameters without the caches, the logits and the caches as "
        "results)",
        where, s.position_ids, prefill));
  const Signature pre = signature_of(dir, prefill);
  if (pre.results.size() != g.results.size() || !pre.inputs.count(s.input_ids))
    throw UserError(fmt::format(
        "{}: the prompt function '{}' takes {} and returns {} results; it must take {} and return "
        "the logits and the {} caches as {} does",
        where, prefill, s.input_ids, pre.results.size(), s.input_ids, s.caches.size(), function));
  s.prefill = prefill;
  s.prefill_results = pre.results;
  return s;
}

}  // namespace

DecoderSignature decoder_signature(const CompiledModelDir& dir, const std::string& function,
                                   const std::string& prefill) {
  const Signature g = signature_of(dir, function);
  bool masked = g.inputs.count("attention_mask") > 0;
  for (const auto& [name, type] : g.inputs)
    for (const char* prefix : kPastPrefixes) masked |= name.starts_with(prefix);
  return masked ? masked_signature(g) : positional_signature(dir, g, function, prefill);
}

}  // namespace weft
