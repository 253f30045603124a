// `weft bench FILE --backend cpu [--compare INPUT_PROGRAM]`: median run time of a µGraph compiled
// by a backend, and its speedup over another program (the unfused input) run by the same backend.
#include <fmt/format.h>

#include "core/target.h"
#include "interp/compare.h"
#include "interp/random_inputs.h"
#include "runtime/runtime.h"
#include "runtime/timing.h"
#include "tools/weft/command.h"

namespace weft::cli {
namespace {

struct Measured {
  Timing timing;
  std::vector<std::vector<float>> outputs;
};

Measured measure(const Graph& g, const Target& t, uint64_t seed, int warmup, int reps) {
  auto prog = compile_program(g, t);
  std::vector<std::vector<float>> in;
  for (const auto& x : random_inputs(g, seed)) in.emplace_back(x.data.begin(), x.data.end());
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

std::string ms(double s) {
  return fmt::format("{:.3f} ms", s * 1e3);
}

}  // namespace

static Register reg(
    "bench", "Time a µGraph compiled by a backend (median of repetitions)", [](CLI::App& sub) {
      auto file = std::make_shared<std::string>();
      auto backend = std::make_shared<std::string>("cpu");
      auto compare = std::make_shared<std::string>();
      auto warmup = std::make_shared<int>(3);
      auto reps = std::make_shared<int>(21);
      auto seed = std::make_shared<uint64_t>(0);
      sub.add_option("FILE", *file, "µGraph file")->required();
      sub.add_option("--backend", *backend, "Backend (cpu)")
          ->check(CLI::IsMember({"cpu"}))
          ->capture_default_str();
      sub.add_option("--compare", *compare,
                     "Another program with the same inputs and outputs (e.g. the unfused input "
                     "program): timed by the same backend, outputs checked to agree");
      sub.add_option("--warmup", *warmup, "Untimed runs first")->capture_default_str();
      sub.add_option("--reps", *reps, "Timed runs (the median is reported)")
          ->check(CLI::PositiveNumber)
          ->capture_default_str();
      sub.add_option("--seed", *seed, "Seed of the random inputs")->capture_default_str();
      return [=]() -> int {
        const Target& t = target_by_name(*backend);
        Graph g = load_graph(*file);
        Measured a = measure(g, t, *seed, *warmup, *reps);
        fmt::print("{} [{}]: median {} (min {}, max {}, {} reps after {} warm-up)\n", *file,
                   *backend, ms(a.timing.median_s), ms(a.timing.min_s), ms(a.timing.max_s),
                   a.timing.reps, *warmup);
        if (compare->empty()) return 0;
        Graph ref = load_graph(*compare);
        Measured b = measure(ref, t, *seed, *warmup, *reps);
        fmt::print("{} [{}]: median {} (min {}, max {}, {} reps after {} warm-up)\n", *compare,
                   *backend, ms(b.timing.median_s), ms(b.timing.min_s), ms(b.timing.max_s),
                   b.timing.reps, *warmup);
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
          agree = agree && compare_outputs(x, y, true).ok;
        }
        fmt::print("speedup of {} over {}: {:.2f}x (outputs {})\n", *file, *compare,
                   b.timing.median_s / a.timing.median_s,
                   agree ? "agree within tolerance" : "DIFFER");
        return agree ? 0 : 3;
      };
    });

}  // namespace weft::cli
