// Timing compiled programs and checking their outputs.
#include "driver/measure.h"

#include <fmt/format.h>

#include <cmath>

#include "core/error.h"
#include "interp/compare.h"
#include "interp/interpreter.h"
#include "interp/random_inputs.h"
#include "runtime/cuda_runtime.h"
#include "runtime/host_tensors.h"

namespace weft {

Repetitions default_repetitions(Backend backend) {
  switch (backend) {
    case Backend::cpu:
      return {3, 21};
    case Backend::cuda:
      return {10, 100};
    case Backend::cuda_emulation:
      return {0, 1};
  }
  return {};
}

MeasureSetup prepare_measurement(const MeasureOptions& options) {
  MeasureSetup s;
  s.backend = options.backend;
  s.seed = options.seed;
  Repetitions defaults = default_repetitions(options.backend);
  s.warmup = options.warmup >= 0 ? options.warmup : defaults.warmup;
  s.reps = options.reps >= 0 ? options.reps : defaults.reps;
  if (s.reps < 1) throw UserError("at least one timed repetition is needed");
  s.target = &backend_target(options.backend, options.target);
  switch (options.backend) {
    case Backend::cpu:
      s.device = "host CPU";
      break;
    case Backend::cuda:
      s.device = require_cuda_device().name;
      break;
    case Backend::cuda_emulation:
      s.device = "host CPU (CUDA emulation)";
      break;
  }
  s.build = options.build;
  s.progress = options.progress;
  return s;
}

namespace {

// Each output's tolerance under the setup: its dtype's on GPU backends, else f32's.
double tolerance_of(const Graph& g, size_t output, const MeasureSetup& setup) {
  return backend_target_kind(setup.backend) == TargetKind::gpu
             ? tolerance_for(g.type(g.outputs[output]).dtype)
             : tolerance_for(/*f32=*/true);
}

}  // namespace

Measurement measure_graph(const Graph& graph, const MeasureSetup& setup) {
  if (setup.progress)
    setup.progress(fmt::format("compiling {} for {} ({})", graph.name, setup.target->name,
                               backend_name(setup.backend)));
  auto prog = compile_program(graph, *setup.target, setup.backend, setup.build);
  std::vector<std::vector<float>> in = host_buffers_of(random_inputs(graph, setup.seed));
  if (setup.progress)
    setup.progress(
        fmt::format("timing {}: {} runs after {} warm-up", graph.name, setup.reps, setup.warmup));
  Measurement m;
  m.outputs = prog->run(in);
  m.timing = prog->time(in, setup.warmup, setup.reps);
  return m;
}

InterpreterCheck check_against_interpreter(const Graph& g, const Measurement& m,
                                           const MeasureSetup& setup) {
  auto inputs = random_inputs(g, setup.seed);
  if (backend_target_kind(setup.backend) == TargetKind::gpu) round_to_input_dtypes(g, inputs);
  auto want = evaluate_real(g, inputs, /*f32=*/false);
  WEFT_CHECK(want.size() == m.outputs.size(), "backend and interpreter disagree on output count");
  InterpreterCheck c;
  c.matches = true;
  for (size_t i = 0; i < want.size(); ++i) {
    WEFT_CHECK(want[i].data.size() == m.outputs[i].size(), "output size differs from interpreter");
    Tensor<double> got(want[i].shape,
                       std::vector<double>(m.outputs[i].begin(), m.outputs[i].end()));
    double tol = tolerance_of(g, i, setup);
    Comparison cmp = compare_outputs(got, want[i], tol);
    c.matches = c.matches && cmp.ok;
    if (!(cmp.scaled_error <= c.scaled_error)) c.scaled_error = cmp.scaled_error;  // NaN sticks
    c.tolerance = std::max(c.tolerance, tol);
  }
  return c;
}

Agreement compare_measurements(const Graph& program, const std::string& program_path,
                               const Measurement& a, const std::string& reference_path,
                               const Measurement& b, const MeasureSetup& setup) {
  if (a.outputs.size() != b.outputs.size())
    throw UserError(fmt::format("{} has {} outputs but {} has {}", program_path, a.outputs.size(),
                                reference_path, b.outputs.size()));
  Agreement r;
  r.outputs_agree = true;
  for (size_t i = 0; i < a.outputs.size(); ++i) {
    if (a.outputs[i].size() != b.outputs[i].size())
      throw UserError(fmt::format("output {} differs in size between the programs", i + 1));
    Shape s{static_cast<int64_t>(a.outputs[i].size())};
    Tensor<double> x(s, std::vector<double>(a.outputs[i].begin(), a.outputs[i].end()));
    Tensor<double> y(s, std::vector<double>(b.outputs[i].begin(), b.outputs[i].end()));
    r.outputs_agree = r.outputs_agree && compare_outputs(x, y, tolerance_of(program, i, setup)).ok;
  }
  r.speedup = b.timing.median_s / a.timing.median_s;
  return r;
}

namespace {

double round_us(double s) {
  return std::round(s * 1e9) / 1e3;
}

nlohmann::ordered_json timing_json(const TimedProgram& t) {
  return {{"file", t.file},
          {"program", t.program},
          {"median_us", round_us(t.timing.median_s)},
          {"min_us", round_us(t.timing.min_s)},
          {"max_us", round_us(t.timing.max_s)}};
}

}  // namespace

nlohmann::ordered_json bench_json(const BenchReport& r) {
  nlohmann::ordered_json out = {{"backend", std::string(backend_name(r.setup.backend))},
                                {"target", r.setup.target->name},
                                {"device", r.setup.device},
                                {"seed", r.setup.seed},
                                {"warmup", r.setup.warmup},
                                {"reps", r.setup.reps},
                                {"program", timing_json(r.program)}};
  if (r.check)
    out["check"] = {{"matches_interpreter", r.check->matches},
                    {"scaled_error", r.check->scaled_error},
                    {"tolerance", r.check->tolerance}};
  if (r.compare) out["compare"] = timing_json(*r.compare);
  if (r.agreement) {
    out["speedup"] = std::round(r.agreement->speedup * 1000) / 1000;
    out["outputs_agree"] = r.agreement->outputs_agree;
  }
  return out;
}

}  // namespace weft
