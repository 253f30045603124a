// `weft verify A B [--target-error E] [--seed N] [--threads N]`: are two µGraphs equivalent?
// Finite-field tests until the error bound reaches the target, then the float error. Exit 0
// equivalent, 3 not equivalent (or outside the Lax fragment), 1 user error.
#include <fmt/format.h>

#include <cmath>

#include "tools/weft/command.h"
#include "verify/equivalence.h"

namespace weft::cli {
namespace {

std::string bound_str(double bound) {
  if (bound <= 0) return "0";
  return fmt::format("2^{:.0f}", std::floor(std::log2(bound)));
}

std::string index_str(const std::vector<int64_t>& idx) {
  std::string s;
  for (size_t i = 0; i < idx.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", idx[i]);
  return "[" + s + "]";
}

void print_floats(const Graph& b, const FloatCheck& fc) {
  for (size_t o = 0; o < fc.outputs.size(); ++o) {
    const auto& e = fc.outputs[o];
    fmt::print(
        "float error, output {} ({}): f32 max abs {:.3g} rel {:.3g} (scaled {:.3g}, tol "
        "{:.0e}), f64 max abs {:.3g} rel {:.3g} (scaled {:.3g}, tol {:.0e})\n",
        o, b.value(b.outputs[o]).name, e.f32.max_abs_error, e.f32.max_rel_error, e.f32.scaled_error,
        e.f32.tolerance, e.f64.max_abs_error, e.f64.max_rel_error, e.f64.scaled_error,
        e.f64.tolerance);
  }
  fmt::print("{}\n", fc.acceptable ? "numerically acceptable" : "NOT numerically acceptable");
}

Register reg("verify", "check that two µGraphs compute the same function (finite-field tests)",
             [](CLI::App& sub) {
               auto a = std::make_shared<std::string>();
               auto b = std::make_shared<std::string>();
               auto opts = std::make_shared<VerifyOptions>();
               sub.add_option("A", *a, "reference program (.weft)")->required();
               sub.add_option("B", *b, "candidate program (.weft)")->required();
               sub.add_option("--target-error", opts->target_error,
                              "stop when the false-positive bound is at most this (default "
                              "2^-60)");
               sub.add_option("--seed", opts->seed, "seed of every random draw");
               sub.add_option("--threads", opts->threads, "threads for field matmuls (0: all)");
               return [=]() -> int {
                 Graph ga = load_graph(*a), gb = load_graph(*b);
                 VerifyResult r = verify_equivalent(ga, gb, *opts);
                 switch (r.verdict) {
                   case Verdict::equivalent:
                     fmt::print("equivalent (bound {} after {} test{})\n", bound_str(r.bound),
                                r.tests_run, r.tests_run == 1 ? "" : "s");
                     break;
                   case Verdict::not_equivalent:
                     fmt::print("NOT equivalent: output {} ({}) differs at element {}\n", r.output,
                                gb.value(gb.outputs[r.output]).name, index_str(r.element));
                     break;
                   case Verdict::outside_lax:
                     fmt::print("outside the Lax fragment: {}\n", r.message);
                     break;
                   case Verdict::error:
                     throw UserError(r.message);
                   case Verdict::abandoned:  // only a check given a give-up time abandons
                     WEFT_CHECK(false, "a verification without a time budget was abandoned");
                     break;
                 }
                 if (r.floats) print_floats(gb, *r.floats);
                 return r.verdict == Verdict::equivalent ? 0 : 3;
               };
             });

}  // namespace
}  // namespace weft::cli
