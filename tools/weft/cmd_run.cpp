// `weft run FILE [--seed N] [--dtype f32|f64] [--backend interp|cpu|cuda] [--compare REF]`: runs a
// µGraph on seeded random inputs with the reference interpreter (or a backend) and summarizes each
// output, or compares it to another program's outputs on the same inputs (exit 3 when outside the
// tolerance).
#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <iostream>

#include "interp/compare.h"
#include "interp/interpreter.h"
#include "interp/random_inputs.h"
#include "runtime/cuda_runtime.h"
#include "runtime/runtime.h"
#include "tools/weft/command.h"

namespace weft::cli {
namespace {

// FNV-1a over the f32 bit patterns: stable for f32 runs, a quick "did anything change" check.
uint64_t checksum(const Tensor<double>& t) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (double v : t.data) {
    uint32_t bits = std::bit_cast<uint32_t>(static_cast<float>(v));
    for (int b = 0; b < 4; ++b) {
      h ^= (bits >> (8 * b)) & 0xFF;
      h *= 0x100000001b3ULL;
    }
  }
  return h;
}

void print_summary(const std::string& name, const TensorType& type, const Tensor<double>& t) {
  double mn = INFINITY, mx = -INFINITY, sum = 0, sq = 0;
  for (double v : t.data) {
    mn = std::min(mn, v);
    mx = std::max(mx, v);
    sum += v;
    sq += v * v;
  }
  std::string first;
  for (size_t i = 0; i < std::min<size_t>(4, t.data.size()); ++i)
    first += fmt::format("{}{:.6g}", i ? ", " : "", t.data[i]);
  fmt::print("output {}: {}\n", name, type.str());
  fmt::print("  min {:.6g}  max {:.6g}  mean {:.6g}  l2 {:.6g}\n", mn, mx,
             sum / static_cast<double>(t.data.size()), std::sqrt(sq));
  fmt::print("  first [{}{}]  checksum {:016x}\n", first, t.data.size() > 4 ? ", ..." : "",
             checksum(t));
}

std::vector<TensorType> input_types(const Graph& g) {
  std::vector<TensorType> out;
  for (ValueId v : g.inputs) out.push_back(g.type(v));
  return out;
}

std::vector<TensorType> output_types(const Graph& g) {
  std::vector<TensorType> out;
  for (ValueId v : g.outputs) out.push_back(g.type(v));
  return out;
}

// Inputs and outputs are matched by position; names may differ.
void require_same_signature(const Graph& a, const std::string& a_path, const Graph& b,
                            const std::string& b_path) {
  auto check = [&](const char* what, const std::vector<TensorType>& ta,
                   const std::vector<TensorType>& tb, const std::vector<ValueId>& ids) {
    if (ta.size() != tb.size())
      throw UserError(SourceLoc{a_path},
                      fmt::format("cannot compare: this program has {} {}s but {} has {}",
                                  ta.size(), what, b_path, tb.size()));
    for (size_t i = 0; i < ta.size(); ++i)
      if (!(ta[i] == tb[i]))
        throw UserError(
            a.value(ids[i]).loc,
            fmt::format("cannot compare: {} {} ('{}') is {} but {} {} of {} is {}", what, i + 1,
                        a.value(ids[i]).name, ta[i].str(), what, i + 1, b_path, tb[i].str()));
  };
  check("input", input_types(a), input_types(b), a.inputs);
  check("output", output_types(a), output_types(b), a.outputs);
}

}  // namespace

static Register reg(
    "run", "Run a µGraph on seeded random inputs (optionally comparing with another program)",
    [](CLI::App& sub) {
      auto file = std::make_shared<std::string>();
      auto compare = std::make_shared<std::string>();
      auto seed = std::make_shared<uint64_t>(0);
      auto dtype = std::make_shared<std::string>("f32");
      sub.add_option("FILE", *file, "µGraph file")->required();
      sub.add_option("--seed", *seed, "Seed of the random inputs (uniform in [-1, 1))")
          ->capture_default_str();
      sub.add_option("--dtype", *dtype,
                     "Arithmetic of the interpreter (declared dtypes are "
                     "not emulated)")
          ->check(CLI::IsMember({"f32", "f64"}))
          ->capture_default_str();
      auto backend = std::make_shared<std::string>("interp");
      auto target = std::make_shared<std::string>();
      sub.add_option("--backend", *backend,
                     "interp: the reference interpreter; cpu: compiled by the CPU backend (f32); "
                     "cuda: compiled by nvcc and run on the GPU (declared dtypes)")
          ->check(CLI::IsMember({"interp", "cpu", "cuda"}))
          ->capture_default_str();
      sub.add_option("--target", *target,
                     "GPU target to lower for with --backend cuda (default: the device's)");
      sub.add_option("--compare", *compare,
                     "Reference program: run both on the same inputs and compare outputs "
                     "(exit 3 when an output is outside the tolerance)");
      return [=]() -> int {
        bool cuda = *backend == "cuda";
        bool f32 = *dtype == "f32" || *backend == "cpu" || cuda;
        auto evaluate_real = [&](const Graph& graph, const std::vector<Tensor<double>>& in,
                                 bool as_f32) {
          if (cuda) return run_on_cuda(graph, in, *target);
          return *backend == "cpu" ? run_on_cpu(graph, in) : weft::evaluate_real(graph, in, as_f32);
        };
        if (!target->empty() && !cuda)
          throw UserError("--target chooses the GPU of --backend cuda; other backends have one");
        // Before anything is compiled: without a device there is nothing to run on.
        if (cuda) require_cuda_device();
        Graph g = load_graph(*file);
        auto inputs = random_inputs(g, *seed);
        if (compare->empty()) {
          fmt::print("{}: {} input{}, seed {}, computed in {}\n", g.name.empty() ? *file : g.name,
                     inputs.size(), inputs.size() == 1 ? "" : "s", *seed,
                     cuda ? "the declared dtypes on the GPU" : *dtype);
          auto outs = evaluate_real(g, inputs, f32);
          for (size_t i = 0; i < outs.size(); ++i)
            print_summary(g.value(g.outputs[i]).name, g.type(g.outputs[i]), outs[i]);
          return 0;
        }
        Graph ref = load_graph(*compare);
        require_same_signature(g, *file, ref, *compare);
        auto got = evaluate_real(g, inputs, f32);
        auto want = evaluate_real(ref, inputs, f32);
        // On the GPU both programs keep their declared dtypes: the tolerance is the output's.
        auto tolerance = [&](size_t i) {
          return cuda ? tolerance_for(g.type(g.outputs[i]).dtype) : tolerance_for(f32);
        };
        fmt::print(
            "{} vs {}: seed {}, computed in {}; tolerance: max |error| <= {:g} * max "
            "|reference|\n",
            *file, *compare, *seed, cuda ? "the declared dtypes on the GPU" : *dtype, tolerance(0));
        bool all_ok = true;
        for (size_t i = 0; i < got.size(); ++i) {
          Comparison c = compare_outputs(got[i], want[i], tolerance(i));
          all_ok = all_ok && c.ok;
          fmt::print(
              "output {} ({}): max abs error {:.3g}, max rel error {:.3g}, max |ref| "
              "{:.6g}, scaled error {:.3g}: {}\n",
              g.value(g.outputs[i]).name, g.type(g.outputs[i]).str(), c.max_abs_error,
              c.max_rel_error, c.max_ref, c.scaled_error,
              c.ok ? "within tolerance" : "OUTSIDE TOLERANCE");
        }
        return all_ok ? 0 : 3;
      };
    });

}  // namespace weft::cli
