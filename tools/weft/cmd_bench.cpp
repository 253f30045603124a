// `weft bench FILE --backend cpu|cuda [--compare INPUT_PROGRAM] [--check] [--json]`: median run
// time of a µGraph compiled by a backend, its speedup over another program (the unfused input) run
// by the same backend, and (--check) whether its outputs match the reference interpreter. On the
// GPU, each run is timed with CUDA events on device-resident buffers.
#include <fmt/format.h>

#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/target.h"
#include "interp/compare.h"
#include "interp/interpreter.h"
#include "interp/random_inputs.h"
#include "runtime/cuda_runtime.h"
#include "runtime/host_tensors.h"
#include "runtime/runtime.h"
#include "runtime/timing.h"
#include "tools/weft/command.h"

namespace weft::cli {
namespace {

struct Measured {
  Timing timing;
  std::vector<std::vector<float>> outputs;
};

std::vector<std::vector<float>> float_inputs(const Graph& g, uint64_t seed) {
  std::vector<std::vector<float>> in;
  for (const auto& x : random_inputs(g, seed)) in.emplace_back(x.data.begin(), x.data.end());
  return in;
}

Measured measure_cpu(const Graph& g, uint64_t seed, int warmup, int reps) {
  auto prog = compile_program(g, target_by_name("cpu"));
  std::vector<std::vector<float>> in = float_inputs(g, seed);
  std::vector<std::vector<float>> outs;
  for (const std::string& name : prog->plan().outputs)
    outs.emplace_back(static_cast<size_t>(numel(prog->plan().find_tensor(name)->shape)), 0.0f);
  std::vector<const float*> ip;
  std::vector<float*> op;
  for (auto& x : in) ip.push_back(x.data());
  for (auto& x : outs) op.push_back(x.data());
  Timing timing = time_runs([&] { prog->run(ip, op); }, warmup, reps);
  return {timing, std::move(outs)};
}

Measured measure_cuda(const Graph& g, const Target& t, uint64_t seed, int warmup, int reps) {
  auto prog = compile_cuda_program(g, t);
  std::vector<std::vector<float>> in = float_inputs(g, seed);
  Measured m;
  m.outputs = prog->run(in);
  m.timing = prog->time(in, warmup, reps);
  return m;
}

std::string ms(double s) {
  return fmt::format("{:.3f} ms", s * 1e3);
}

std::string us(double s) {
  return fmt::format("{:.2f} us", s * 1e6);
}

double round_us(double s) {
  return std::round(s * 1e9) / 1e3;
}

nlohmann::ordered_json timing_json(const std::string& file, const Graph& g, const Timing& t) {
  return {{"file", file},
          {"program", g.name},
          {"median_us", round_us(t.median_s)},
          {"min_us", round_us(t.min_s)},
          {"max_us", round_us(t.max_s)}};
}

// The backend's outputs against the reference interpreter (f64) on the same inputs. The GPU
// stores inputs in their declared dtypes, so the interpreter sees them rounded the same way and
// the tolerance is the output dtype's; the CPU backend computes in f32 on the unrounded inputs.
nlohmann::ordered_json check_against_interpreter(const Graph& g, const Measured& m, uint64_t seed,
                                                 bool cuda) {
  auto inputs = random_inputs(g, seed);
  if (cuda) round_to_input_dtypes(g, inputs);
  auto want = evaluate_real(g, inputs, /*f32=*/false);
  WEFT_CHECK(want.size() == m.outputs.size(), "backend and interpreter disagree on output count");
  bool ok = true;
  double worst = 0, tolerance = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    WEFT_CHECK(want[i].data.size() == m.outputs[i].size(), "output size differs from interpreter");
    Tensor<double> got(want[i].shape,
                       std::vector<double>(m.outputs[i].begin(), m.outputs[i].end()));
    double tol = cuda ? tolerance_for(g.type(g.outputs[i]).dtype) : tolerance_for(true);
    Comparison c = compare_outputs(got, want[i], tol);
    ok = ok && c.ok;
    if (!(c.scaled_error <= worst)) worst = c.scaled_error;  // NaN propagates
    tolerance = std::max(tolerance, tol);
  }
  return {{"matches_interpreter", ok}, {"scaled_error", worst}, {"tolerance", tolerance}};
}

}  // namespace

static Register reg(
    "bench", "Time a µGraph compiled by a backend (median of repetitions)", [](CLI::App& sub) {
      auto file = std::make_shared<std::string>();
      auto backend = std::make_shared<std::string>("cpu");
      auto target = std::make_shared<std::string>();
      auto compare = std::make_shared<std::string>();
      auto warmup = std::make_shared<int>(-1);
      auto reps = std::make_shared<int>(-1);
      auto seed = std::make_shared<uint64_t>(0);
      auto json = std::make_shared<bool>(false);
      auto check = std::make_shared<bool>(false);
      sub.add_option("FILE", *file, "µGraph file")->required();
      sub.add_option("--backend", *backend, "cpu, or cuda (the GPU, timed with CUDA events)")
          ->check(CLI::IsMember({"cpu", "cuda"}))
          ->capture_default_str();
      sub.add_option("--target", *target,
                     "GPU target to lower for with --backend cuda (default: the device's)");
      sub.add_option("--compare", *compare,
                     "Another program with the same inputs and outputs (e.g. the unfused input "
                     "program): timed by the same backend, outputs checked to agree");
      sub.add_option("--warmup", *warmup, "Untimed runs first (default: cpu 3, cuda 10)");
      sub.add_option("--reps", *reps,
                     "Timed runs, the median is reported (default: cpu 21, cuda 100)");
      sub.add_option("--seed", *seed, "Seed of the random inputs")->capture_default_str();
      sub.add_flag("--json", *json, "Print the result as JSON (times in microseconds)");
      sub.add_flag("--check", *check,
                   "Also compare FILE's outputs with the reference interpreter (f64, same inputs) "
                   "within the output dtype's tolerance (exit 3 when outside)");
      return [=]() -> int {
        bool cuda = *backend == "cuda";
        int w = *warmup >= 0 ? *warmup : cuda ? 10 : 3;
        int r = *reps >= 0 ? *reps : cuda ? 100 : 21;
        if (r < 1) throw UserError("--reps must be at least 1");
        if (!target->empty() && !cuda)
          throw UserError("--target chooses the GPU of --backend cuda; the CPU backend has one");
        const Target* t = &target_by_name("cpu");
        std::string device = "host CPU";
        if (cuda) {
          // Before anything is compiled: without a device there is nothing to time.
          const CudaDevice& dev = require_cuda_device();
          t = target->empty() ? &target_for_device(dev) : &target_by_name(*target);
          device = dev.name;
        }
        auto measure = [&](const Graph& g) {
          return cuda ? measure_cuda(g, *t, *seed, w, r) : measure_cpu(g, *seed, w, r);
        };
        auto report = [&](const std::string& path, const Measured& m) {
          if (*json) return;
          std::string label = cuda ? fmt::format("cuda {}", t->name) : *backend;
          auto fmt_time = cuda ? us : ms;
          fmt::print("{} [{}]: median {} (min {}, max {}, {} reps after {} warm-up)\n", path, label,
                     fmt_time(m.timing.median_s), fmt_time(m.timing.min_s),
                     fmt_time(m.timing.max_s), m.timing.reps, w);
        };
        Graph g = load_graph(*file);
        Measured a = measure(g);
        report(*file, a);
        nlohmann::ordered_json out = {{"backend", *backend},
                                      {"target", t->name},
                                      {"device", device},
                                      {"seed", *seed},
                                      {"warmup", w},
                                      {"reps", r},
                                      {"program", timing_json(*file, g, a.timing)}};
        int rc = 0;
        if (*check) {
          nlohmann::ordered_json c = check_against_interpreter(g, a, *seed, cuda);
          bool ok = c["matches_interpreter"].get<bool>();
          if (!*json)
            fmt::print(
                "{} vs the reference interpreter: {} (scaled error {:.3g}, tolerance {:.3g})\n",
                *file, ok ? "matches" : "DIFFERS", c["scaled_error"].get<double>(),
                c["tolerance"].get<double>());
          out["check"] = std::move(c);
          if (!ok) rc = 3;
        }
        if (!compare->empty()) {
          Graph ref = load_graph(*compare);
          Measured b = measure(ref);
          report(*compare, b);
          if (a.outputs.size() != b.outputs.size())
            throw UserError(fmt::format("{} has {} outputs but {} has {}", *file, a.outputs.size(),
                                        *compare, b.outputs.size()));
          bool agree = true;
          for (size_t i = 0; i < a.outputs.size(); ++i) {
            if (a.outputs[i].size() != b.outputs[i].size())
              throw UserError(fmt::format("output {} differs in size between the programs", i + 1));
            Shape s{static_cast<int64_t>(a.outputs[i].size())};
            Tensor<double> x(s, std::vector<double>(a.outputs[i].begin(), a.outputs[i].end()));
            Tensor<double> y(s, std::vector<double>(b.outputs[i].begin(), b.outputs[i].end()));
            // The GPU keeps the declared dtypes, so the tolerance is the output's.
            double tol = cuda ? tolerance_for(g.type(g.outputs[i]).dtype) : tolerance_for(true);
            agree = agree && compare_outputs(x, y, tol).ok;
          }
          double speedup = b.timing.median_s / a.timing.median_s;
          out["compare"] = timing_json(*compare, ref, b.timing);
          out["speedup"] = std::round(speedup * 1000) / 1000;
          out["outputs_agree"] = agree;
          if (!*json)
            fmt::print("speedup of {} over {}: {:.2f}x (outputs {})\n", *file, *compare, speedup,
                       agree ? "agree within tolerance" : "DIFFER");
          if (!agree) rc = 3;
        }
        if (*json) std::cout << out.dump(2) << "\n";
        return rc;
      };
    });

}  // namespace weft::cli
