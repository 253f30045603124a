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

}  // namespace

Shape DecoderCache::shape_of(int64_t length) const {
  Shape s = shape;
  s.at(static_cast<size_t>(axis)) = length;
  return s;
}

DecoderSignature decoder_signature(const CompiledModelDir& dir, const std::string& function) {
  const Function& fn = function_to_run(dir.compiled(), function, SourceLoc{dir.dir()});
  const std::vector<std::string> names = dir.parameter_names(function);
  const std::vector<std::string> callers = dir.input_names(function);
  std::map<std::string, const MType*> inputs;
  for (size_t i = 0; i < fn.params.size(); ++i)
    if (std::find(callers.begin(), callers.end(), names[i]) != callers.end())
      inputs[names[i]] = &fn.params[i].type;
  std::map<std::string, const MType*> outputs;
  if (fn.ret.kind == MTypeKind::tuple) {
    for (size_t i = 0; i < fn.ret.fields.size(); ++i)
      outputs[dir.output_name(fmt::format("result.{}", i))] = &fn.ret.fields[i];
  } else {
    outputs[dir.output_name("result")] = &fn.ret;
  }
  const std::string where = fmt::format("{} ({})", dir.dir(), function);
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
  if (!unexpected.empty())
    throw UserError(fmt::format("{}: inputs {} are not a decode step's ({})", where,
                                fmt::join(unexpected, ", "), kHowToExport));
  if (s.caches.empty())
    throw UserError(
        fmt::format("{} is not a decoder with its KV cache: no past_key_values inputs ({})", where,
                    kHowToExport));
  return s;
}

}  // namespace weft
