// Driver: greedy decoding with a decoder the user has, on the VM or one persistent launch a step.
#include "driver/model_decode.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cmath>
#include <map>
#include <memory>

#include "core/error.h"
#include "driver/decoder_signature.h"
#include "driver/model_megakernel.h"
#include "driver/mpk_run.h"
#include "exec/run_io.h"
#include "sym/evaluate.h"

namespace weft {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

NpyArray integers(Shape shape, std::vector<double> values) {
  return NpyArray{Tensor<double>(std::move(shape), std::move(values)), true};
}

// A cache tensor as `outer` runs of [length, inner] along its cache axis.
struct SlotLayout {
  int64_t outer = 1, inner = 1;
};
SlotLayout slot_layout(const DecoderCache& c) {
  SlotLayout l;
  for (size_t a = 0; a < c.shape.size(); ++a) {
    if (static_cast<int>(a) < c.axis) l.outer *= c.shape[a];
    if (static_cast<int>(a) > c.axis) l.inner *= c.shape[a];
  }
  return l;
}

// The first maximum of `n` values (NumPy's argmax); UserError for a NaN, which no greedy choice
// can follow.
template <typename T>
int64_t argmax(const T* v, int64_t n, int64_t step) {
  int64_t best = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(static_cast<double>(v[i])))
      throw UserError(fmt::format("the logits of decode step {} hold NaN", step));
    if (v[i] > v[best]) best = i;
  }
  return best;
}

// What every path shares: the signature, the prompt, the tokens fed and chosen, progress.
struct DecodeState {
  const DecoderSignature& sig;
  const std::vector<int64_t>& prompt;
  const ModelDecodeOptions& options;
  ModelDecodeResult result;

  // The token fed at fixed-capacity step `pos`: the prompt's, then the ones chosen.
  double fed(int64_t pos) const {
    const auto n = static_cast<int64_t>(prompt.size());
    return static_cast<double>(pos < n ? prompt[static_cast<size_t>(pos)]
                                       : result.tokens[static_cast<size_t>(pos - n)]);
  }
  std::vector<double> rows(double v) const {
    return std::vector<double>(static_cast<size_t>(sig.batch), v);
  }
  void chose(int64_t token, double step_seconds, int64_t step, int64_t steps) {
    result.tokens.push_back(token);
    note(step_seconds, step, steps);
  }
  // After a VM run of the step: whether it ran compiled, and the directory's advice when not.
  void ran(const CompiledModelDir& dir) {
    if (dir.generic_path_note().empty())
      ++result.compiled_steps;
    else if (result.note.empty())
      result.note = dir.generic_path_note();
  }
  void note(double step_seconds, int64_t step, int64_t steps) {
    result.step_seconds.push_back(step_seconds);
    if (options.progress && (step + 1 == steps || (step + 1) % 8 == 0))
      options.progress(fmt::format("step {}/{}: {} tokens generated, last step {:.3f} ms", step + 1,
                                   steps, result.tokens.size(), step_seconds * 1e3));
  }
};

// The arrays of one fixed-capacity step at `pos` (caches and mask as the caller keeps them).
NpzArrays fixed_step_arrays(const DecodeState& s, int64_t pos, const Tensor<double>& mask,
                            const std::map<std::string, Tensor<double>>& caches) {
  NpzArrays a = s.options.weights;
  a[s.sig.input_ids] = integers({s.sig.batch, 1}, s.rows(s.fed(pos)));
  a[s.sig.position_ids] = integers({s.sig.batch, 1}, s.rows(static_cast<double>(pos)));
  a[s.sig.attention_mask] = NpyArray{mask, true};
  for (const auto& [name, t] : caches) a[name] = NpyArray{t, false};
  return a;
}

// Row 0's logits at its last position, from a [batch, seq, vocab] tensor of `numel` values.
int64_t last_row_offset(int64_t numel, int64_t batch, int64_t vocab) {
  return numel / batch - vocab;
}

// The greedy choice from a step's logits [batch, seq, vocab]: row 0, last position.
int64_t choose(const Tensor<double>& logits, int64_t batch, int64_t step) {
  const int64_t vocab = logits.shape.back();
  return argmax(logits.data.data() + last_row_offset(logits.numel(), batch, vocab), vocab, step);
}

void decode_vm_growing(CompiledModelDir& dir, DecodeState& s) {
  const DecoderSignature& sig = s.sig;
  const auto n = static_cast<int64_t>(s.prompt.size());
  // weft's dims are at least 1: the empty cache is one slot the mask hides.
  std::map<std::string, Tensor<double>> caches;
  for (const DecoderCache& c : sig.caches) caches[c.past] = Tensor<double>(c.shape_of(1), 0.0);
  const int64_t steps = s.options.tokens;
  for (int64_t step = 0; step < steps; ++step) {
    const int64_t past = 1 + (step == 0 ? 0 : n + step - 1);
    const int64_t seq = step == 0 ? n : 1;
    NpzArrays a = s.options.weights;
    std::vector<double> ids, positions, mask;
    for (int64_t b = 0; b < sig.batch; ++b) {
      for (int64_t i = 0; i < seq; ++i) {
        ids.push_back(step == 0 ? static_cast<double>(s.prompt[static_cast<size_t>(i)])
                                : static_cast<double>(s.result.tokens.back()));
        positions.push_back(static_cast<double>(past - 1 + i));
      }
      for (int64_t i = 0; i < past + seq; ++i) mask.push_back(i == 0 ? 0.0 : 1.0);
    }
    a[sig.input_ids] = integers({sig.batch, seq}, ids);
    a[sig.position_ids] = integers({sig.batch, seq}, positions);
    a[sig.attention_mask] = integers({sig.batch, past + seq}, mask);
    for (const auto& [name, t] : caches) a[name] = NpyArray{t, false};
    const Clock::time_point t0 = Clock::now();
    std::map<std::string, Tensor<double>> out =
        dir.run(s.options.function, a, dir.dir(), s.options.executor);
    s.ran(dir);
    const int64_t token = choose(out.at(sig.logits), sig.batch, step);
    for (const DecoderCache& c : sig.caches) caches[c.past] = std::move(out.at(c.present));
    s.chose(token, seconds_since(t0), step, steps);
  }
}

// A fixed-capacity decode's state: every cache slot empty and masked, the mask's last column (the
// fed token's) set.
std::pair<std::map<std::string, Tensor<double>>, Tensor<double>> empty_fixed_cache(
    const DecoderSignature& sig, int64_t capacity) {
  std::map<std::string, Tensor<double>> caches;
  for (const DecoderCache& c : sig.caches)
    caches[c.past] = Tensor<double>(c.shape_of(capacity), 0.0);
  Tensor<double> mask({sig.batch, capacity + 1}, 0.0);
  for (int64_t b = 0; b < sig.batch; ++b)
    mask.data[static_cast<size_t>(b * (capacity + 1) + capacity)] = 1;
  return {std::move(caches), std::move(mask)};
}

// The fed token's entry of `present` (position `capacity` of each run along the cache axis) into
// slot `to` of `past` (`capacity` positions).
void commit_slot(Tensor<double>& past, const Tensor<double>& present, const DecoderCache& c,
                 int64_t capacity, int64_t to) {
  const SlotLayout l = slot_layout(c);
  for (int64_t o = 0; o < l.outer; ++o)
    for (int64_t i = 0; i < l.inner; ++i)
      past.data[static_cast<size_t>((o * capacity + to) * l.inner + i)] =
          present.data[static_cast<size_t>((o * (capacity + 1) + capacity) * l.inner + i)];
}

void decode_vm_fixed(CompiledModelDir& dir, DecodeState& s, int64_t capacity, int64_t steps) {
  const DecoderSignature& sig = s.sig;
  const auto n = static_cast<int64_t>(s.prompt.size());
  auto [caches, mask] = empty_fixed_cache(sig, capacity);
  for (int64_t pos = 0; pos < steps; ++pos) {
    const Clock::time_point t0 = Clock::now();
    std::map<std::string, Tensor<double>> out = dir.run(
        s.options.function, fixed_step_arrays(s, pos, mask, caches), dir.dir(), s.options.executor);
    s.ran(dir);
    if (pos + 1 < steps) {
      for (const DecoderCache& c : sig.caches)
        commit_slot(caches[c.past], out.at(c.present), c, capacity, pos);
      for (int64_t b = 0; b < sig.batch; ++b)
        mask.data[static_cast<size_t>(b * (capacity + 1) + pos)] = 1;
    }
    if (pos + 1 >= n) {
      s.chose(choose(out.at(sig.logits), sig.batch, pos), seconds_since(t0), pos, steps);
    } else {
      s.note(seconds_since(t0), pos, steps);
    }
  }
}

// A positional decoder: the prompt through its prompt function at cache length 0, then a token a
// step with the cache grown by the step's results; on the VM or, with the persistent kernel, each
// step traced and built for its shape (no fixed capacity without a mask) and launched once.
void decode_positional(CompiledModelDir& dir, DecodeState& s) {
  const DecoderSignature& sig = s.sig;
  const auto n = static_cast<int64_t>(s.prompt.size());
  std::map<std::string, Tensor<double>> caches;
  const int64_t steps = s.options.tokens;
  for (int64_t step = 0; step < steps; ++step) {
    const bool prompt = step == 0;
    const std::string& function = prompt ? sig.prefill : s.options.function;
    NpzArrays a = s.options.weights;
    std::vector<double> ids;
    for (int64_t b = 0; b < sig.batch; ++b)
      for (int64_t i = 0; i < (prompt ? n : 1); ++i)
        ids.push_back(static_cast<double>(prompt ? s.prompt[static_cast<size_t>(i)]
                                                 : s.result.tokens.back()));
    a[sig.input_ids] = integers({sig.batch, prompt ? n : 1}, ids);
    a[sig.position_ids] = integers({}, {static_cast<double>(prompt ? 0 : n + step - 1)});
    if (!prompt)
      for (const auto& [name, t] : caches) a[name] = NpyArray{t, false};
    const Clock::time_point t0 = Clock::now();
    std::map<std::string, Tensor<double>> out;
    double seconds = 0;
    if (s.options.path == DecodePath::megakernel) {
      const std::vector<VmValue> args = dir.arguments(function, a, dir.dir());
      ModelMegakernelOptions mo;
      mo.function = function;
      mo.platform = s.options.platform;
      mo.workers = s.options.workers;
      const ModelMegakernel m = model_megakernel(dir, args, mo);
      ModelMegakernelRun r = run_model_megakernel(dir, m, args);
      out = std::move(r.results);
      seconds = r.seconds;
      s.result.build_seconds += seconds_since(t0) - r.seconds;
      s.result.stored_plan |= m.stored;
      if (dir.is_compiled_binding(dir.binding_of(function, args))) ++s.result.compiled_steps;
    } else {
      out = dir.run(function, a, dir.dir(), s.options.executor);
      seconds = seconds_since(t0);
      s.ran(dir);
    }
    const int64_t token =
        choose(out.at(prompt ? sig.prefill_results.at(0) : sig.logits), sig.batch, step);
    for (size_t c = 0; c < sig.caches.size(); ++c)
      caches[sig.caches[c].past] =
          std::move(out.at(prompt ? sig.prefill_results.at(c + 1) : sig.caches[c].present));
    s.chose(token, seconds, step, steps);
  }
}

void decode_megakernel(CompiledModelDir& dir, DecodeState& s, int64_t capacity, int64_t steps) {
  const DecoderSignature& sig = s.sig;
  const auto n = static_cast<int64_t>(s.prompt.size());
  auto [caches, mask] = empty_fixed_cache(sig, capacity);
  const std::vector<VmValue> args =
      dir.arguments(s.options.function, fixed_step_arrays(s, 0, mask, caches), dir.dir());

  const Clock::time_point build = Clock::now();
  ModelMegakernelOptions mo;
  mo.function = s.options.function;
  mo.platform = s.options.platform;
  mo.workers = s.options.workers;
  const ModelMegakernel m = model_megakernel(dir, args, mo);
  const SymBinding binding = dir.binding_of(s.options.function, args);
  const bool compiled = dir.is_compiled_binding(binding);
  if (!compiled)
    s.result.note = fmt::format(
        "the step's persistent kernel holds the per-operator path: {} was not compiled at {} "
        "(`weft compile` with --bind {} adds its superoptimized kernels)",
        dir.dir(), binding_str(binding), binding_str(binding));
  s.result.stored_plan = m.stored;
  std::map<std::string, size_t> input, output;
  const std::vector<std::string> names = dir.parameter_names(s.options.function);
  const std::vector<std::optional<size_t>> input_of = model_megakernel_input_of(args);
  for (size_t i = 0; i < args.size(); ++i)
    if (input_of[i]) input[names[i]] = *input_of[i];
  for (size_t j = 0; j < m.result_keys.size(); ++j) output[dir.output_name(m.result_keys[j])] = j;
  const size_t logits = output.at(sig.logits);
  const Shape& logits_shape = m.result_shapes.at(logits);
  const int64_t vocab = logits_shape.back();
  const int64_t logits_row = last_row_offset(numel(logits_shape), sig.batch, vocab);
  // The persistent kernel reports no index out of range (the VM does): ids are checked here.
  for (int64_t t : s.prompt)
    if (t >= vocab)
      throw UserError(fmt::format(
          "token id {} of the prompt is outside the vocabulary of {} (the logits' last dim)", t,
          vocab));
  MegakernelRunner runner(m.program);
  if (s.options.progress)
    s.options.progress(fmt::format(
        "one persistent kernel for the step at a cache of {} slots: {} plan kernels, {} tasks, "
        "{} workers ({}); building it",
        capacity, m.program.plan.kernels.size(), runner.compiled().graph.tasks.size(),
        runner.compiled().graph.workers, mpk_platform_name(m.program.platform)));
  std::unique_ptr<ResidentPlanRun> run =
      runner.megakernel().resident(model_megakernel_inputs(m, args));
  s.result.build_seconds = seconds_since(build);
  s.result.setup_bytes = run->setup_bytes();

  for (int64_t pos = 0; pos < steps; ++pos) {
    const Clock::time_point t0 = Clock::now();
    if (pos > 0) {  // the first step's token and position were placed with the inputs
      run->write_input(input.at(sig.input_ids), 0, std::vector<float>(sig.batch, s.fed(pos)));
      run->write_input(input.at(sig.position_ids), 0,
                       std::vector<float>(sig.batch, static_cast<float>(pos)));
    }
    run->launch();
    if (pos + 1 < steps) {
      for (const DecoderCache& c : sig.caches) {
        const SlotLayout l = slot_layout(c);
        for (int64_t o = 0; o < l.outer; ++o)
          run->copy_output_to_input(output.at(c.present), (o * (capacity + 1) + capacity) * l.inner,
                                    input.at(c.past), (o * capacity + pos) * l.inner, l.inner);
      }
      for (int64_t b = 0; b < sig.batch; ++b)
        run->write_input(input.at(sig.attention_mask), b * (capacity + 1) + pos, {1.0f});
    }
    if (pos + 1 >= n) {
      const std::vector<float> row = run->read_output(logits, logits_row, vocab);
      s.chose(argmax(row.data(), vocab, pos), seconds_since(t0), pos, steps);
    } else {
      s.note(seconds_since(t0), pos, steps);
    }
  }
  if (compiled) s.result.compiled_steps = steps;
  s.result.bytes_to_device_per_step = static_cast<double>(run->bytes_to_device()) / steps;
  s.result.bytes_to_host_per_step = static_cast<double>(run->bytes_to_host()) / steps;
}

}  // namespace

ModelDecodeResult decode_model(CompiledModelDir& dir, const std::vector<int64_t>& prompt,
                               const ModelDecodeOptions& options) {
  const DecoderSignature sig = decoder_signature(dir, options.function, options.prefill);
  std::vector<std::string> missing;
  for (const std::string& w : sig.weights)
    if (!options.weights.count(w)) missing.push_back(w);
  if (!missing.empty())
    throw UserError(fmt::format(
        "{} ({}) takes {} besides its decode roles: give {} with --weights FILE.npz (arrays by "
        "parameter name)",
        dir.dir(), options.function, fmt::join(missing, ", "),
        missing.size() == 1 ? "it" : "them"));
  if (prompt.empty()) throw UserError("decoding needs a prompt of at least one token");
  if (options.tokens < 1)
    throw UserError(fmt::format("{} tokens to generate: give at least 1", options.tokens));
  for (int64_t t : prompt)
    if (t < 0 || (sig.vocab && t >= *sig.vocab))
      throw UserError(fmt::format("token id {} of the prompt is outside the vocabulary{}", t,
                                  sig.vocab ? fmt::format(" of {}", *sig.vocab) : ""));
  DecodeState s{sig, prompt, options, {}};
  const auto n = static_cast<int64_t>(prompt.size());
  if (sig.kind == DecoderKind::positional) {
    if (options.capacity > 0)
      throw UserError(fmt::format(
          "{} ({}) has no attention mask: its cache cannot hold masked slots, so it grows a "
          "position a step (decode without --capacity)",
          dir.dir(), options.function));
    decode_positional(dir, s);
    if (s.result.compiled_steps < static_cast<int64_t>(s.result.step_seconds.size()))
      s.result.note = fmt::format(
          "{} of {} steps ran at a binding {} was compiled at: the cache's length, and so the "
          "binding, changes every step",
          s.result.compiled_steps, s.result.step_seconds.size(), dir.dir());
    return std::move(s.result);
  }
  const int64_t steps = n + options.tokens - 1;  // fixed capacity: a token fed a step
  // Slot `pos` is filled after step `pos` for the steps after it.
  const int64_t needed = std::max<int64_t>(1, steps - 1);
  int64_t capacity = options.capacity;
  if (capacity == 0 && (options.path == DecodePath::megakernel || sig.fixed_cache))
    capacity = sig.fixed_cache.value_or(needed);
  if (sig.fixed_cache && capacity != *sig.fixed_cache)
    throw UserError(fmt::format("{}: its cache has the fixed length {}, not a capacity of {}",
                                dir.dir(), *sig.fixed_cache, capacity));
  if (capacity < 0) throw UserError(fmt::format("a capacity of {} cache slots", capacity));
  if (capacity > 0 && capacity < needed)
    throw UserError(fmt::format(
        "a cache of {} slots holds a prompt of {} and {} new tokens at most, not {} (give a "
        "capacity of {} or more)",
        capacity, n, std::max<int64_t>(0, capacity + 2 - n), options.tokens, needed));
  s.result.capacity = capacity;
  if (options.path == DecodePath::megakernel)
    decode_megakernel(dir, s, capacity, steps);
  else if (capacity > 0)
    decode_vm_fixed(dir, s, capacity, steps);
  else
    decode_vm_growing(dir, s);
  if (capacity == 0 && s.result.compiled_steps < static_cast<int64_t>(s.result.step_seconds.size()))
    s.result.note = fmt::format(
        "{} of {} steps ran at a binding {} was compiled at: a growing cache changes the binding "
        "every step (decode with --capacity C and compile the step at its binding to run its "
        "superoptimized kernels every step)",
        s.result.compiled_steps, s.result.step_seconds.size(), dir.dir());
  return std::move(s.result);
}

}  // namespace weft
