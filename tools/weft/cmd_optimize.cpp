// `weft optimize`: search for the fastest verified µGraph of a program and write the results.
#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "core/target.h"
#include "ir/printer.h"
#include "search/optimizer.h"
#include "tools/weft/command.h"

namespace weft::cli {
namespace {

std::string bound_text(double bound) {
  if (bound <= 0) return "0";
  return fmt::format("2^{:.0f}", std::floor(std::log2(bound)));
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  if (!out) throw UserError(SourceLoc{path.string()}, "cannot write this file");
}

double megabytes(int64_t bytes) {
  return std::round(static_cast<double>(bytes) / (int64_t{1} << 20) * 10) / 10;
}

std::string candidate_header(const RankedCandidate& c, int rank, const std::string& target) {
  return fmt::format(
      "# weft optimize: rank {}, predicted {:.2f} us on {}\n# verified: equivalent to the input "
      "program with error bound {} ({} finite-field tests); f32 error {:.2e}\n",
      rank, c.predicted_s * 1e6, target, bound_text(c.verification.bound), c.verification.tests,
      c.verification.f32_error);
}

int run_optimize(const std::string& file, const std::string& out_dir, SearchConfig config,
                 bool progress) {
  Graph program = load_graph(file);
  OptimizeOptions options;
  options.progress = progress;
  options.progress_tty = isatty(STDERR_FILENO);
  OptimizeResult r = optimize(program, config, options);

  std::filesystem::path dir(out_dir);
  std::filesystem::create_directories(dir);
  nlohmann::json top = nlohmann::json::array();
  for (size_t i = 0; i < r.top.size(); ++i) {
    const RankedCandidate& c = r.top[i];
    std::string name = fmt::format("top-{}.weft", i + 1);
    std::string text = candidate_header(c, static_cast<int>(i + 1), config.target) + print_graph(c.graph);
    write_file(dir / name, text);
    if (i == 0) write_file(dir / "best.weft", text);
    top.push_back({{"file", name},
                   {"predicted_us", std::round(c.predicted_s * 1e9) / 1e3},
                   {"kernels", c.graph.ops.size()},
                   {"error_bound_log2", std::floor(std::log2(c.verification.bound))},
                   {"tests", c.verification.tests},
                   {"f32_error", c.verification.f32_error}});
  }
  // summary.json holds only what the same input and configuration reproduce byte for byte;
  // timing.json holds the wall-clock figures.
  nlohmann::json summary = {
      {"program", program.name},
      {"input", std::filesystem::path(file).filename().string()},
      {"config", config.to_json()},
      {"stop_reason", search_stop_name(r.stop)},
      {"memory_budget_mb", config.memory_budget_mb},
      {"peak_accounted_memory_mb", megabytes(r.peak_accounted_bytes)},
      {"memo_schedules_truncated", r.memo_truncated},
      {"states", r.states},
      {"pruned_by_expression", r.pruned_expr},
      {"pruned_by_op_budget", r.pruned_bound},
      {"block_graphs", r.block_graphs},
      {"candidates", r.candidates},
      {"split_candidates", r.split_candidates},
      {"invalid_on_target", r.invalid},
      {"verified", r.verified},
      {"rejected", r.rejected},
      {"numerically_rejected", r.numerically_rejected},
      {"unverified_below_top_k", r.unverified},
      {"finite_field_tests", r.tests},
      {"oracle_complete", r.oracle_complete},
      {"input_predicted_us", std::round(r.program_predicted_s * 1e9) / 1e3},
      {"roofline_floor_us", std::round(r.roofline_s * 1e9) / 1e3},
      {"top", top}};
  if (!r.top.empty())
    summary["predicted_speedup"] = std::round(r.program_predicted_s / r.top[0].predicted_s * 1000) / 1000;
  write_file(dir / "summary.json", summary.dump(2) + "\n");
  nlohmann::json timing = {{"search_s", r.search_s},
                           {"verify_s", r.verify_s},
                           {"wall_s", r.wall_s},
                           {"states_per_s", r.search_s > 0 ? r.states / r.search_s : 0.0},
                           {"peak_rss_search_mb", megabytes(r.peak_rss_bytes)},
                           {"resumed_from_checkpoint", r.resumed}};
  write_file(dir / "timing.json", timing.dump(2) + "\n");

  fmt::print("weft optimize: {} on {}\n", program.name.empty() ? file : program.name, config.target);
  fmt::print("  search: {} states in {:.1f} s (stop: {}{}), {} pruned by abstract expressions\n",
             r.states, r.search_s, search_stop_name(r.stop), r.resumed ? ", resumed" : "",
             r.pruned_expr);
  fmt::print(
      "  memory: peak {:.1f} MB accounted of {}{}; peak resident {:.1f} MB\n",
      megabytes(r.peak_accounted_bytes),
      config.memory_budget_mb > 0 ? fmt::format("a {} MB budget", config.memory_budget_mb)
                                  : std::string("no budget"),
      r.memo_truncated > 0
          ? fmt::format(" (memo full: {} schedules' block graphs cut short)", r.memo_truncated)
          : std::string(),
      megabytes(r.peak_rss_bytes));
  fmt::print("  candidates: {} equivalent by abstract expression ({} split-reduction), {} invalid "
             "on {}, {} verified, {} rejected, {} not needed for the top {}\n",
             r.candidates, r.split_candidates, r.invalid, config.target, r.verified, r.rejected,
             r.unverified, config.top_k);
  fmt::print("  input program: {:.2f} us predicted; roofline floor {:.2f} us\n",
             r.program_predicted_s * 1e6, r.roofline_s * 1e6);
  if (r.top.empty()) {
    fmt::print("  no verified µGraph found within the budget\n");
    return 0;
  }
  const RankedCandidate& best = r.top[0];
  fmt::print("  best µGraph: {:.2f} us predicted ({} kernel op{}), {:.2f}x the input program; error "
             "bound {} after {} tests, f32 error {:.1e}\n",
             best.predicted_s * 1e6, best.graph.ops.size(), best.graph.ops.size() == 1 ? "" : "s",
             r.program_predicted_s / best.predicted_s, bound_text(best.verification.bound),
             best.verification.tests, best.verification.f32_error);
  fmt::print("  wrote {}/best.weft, top-1..{}.weft, summary.json, timing.json\n", out_dir, r.top.size());
  fmt::print("  picture: weft dot {}/best.weft -o {}/best.svg\n", out_dir, out_dir);
  return 0;
}

Register reg("optimize", "Search for the fastest verified µGraph equivalent to a program",
             [](CLI::App& sub) {
               auto file = std::make_shared<std::string>();
               auto out = std::make_shared<std::string>("weft-out");
               auto config_path = std::make_shared<std::string>();
               auto overrides = std::make_shared<SearchConfig>();
               auto target = std::make_shared<std::string>();
               auto time_budget = std::make_shared<double>(-1);
               auto states = std::make_shared<int64_t>(-1);
               auto memory_budget = std::make_shared<int64_t>(-1);
               auto threads = std::make_shared<int>(-1);
               auto top_k = std::make_shared<int>(-1);
               auto seed = std::make_shared<int64_t>(-1);
               auto checkpoint = std::make_shared<std::string>();
               auto progress = std::make_shared<bool>(false);
               auto quiet = std::make_shared<bool>(false);
               auto no_pruning = std::make_shared<bool>(false);
               sub.add_option("file", *file, "input program (.weft)")->required();
               sub.add_option("-o,--output", *out, "output directory")->capture_default_str();
               sub.add_option("--config", *config_path, "JSON file overriding the search configuration");
               sub.add_option("--target", *target, "hardware target (see `weft targets`)");
               sub.add_option("--time-budget", *time_budget, "seconds of search (0: unlimited)");
               sub.add_option("--states", *states, "state budget (0: unlimited)");
               CLI::Option* memory_option = sub.add_option(
                   "--memory-budget", *memory_budget,
                   fmt::format("megabytes the search may hold (memo, candidates, terms; default: "
                               "half the physical memory, {} here; 0: unlimited)",
                               SearchConfig::default_memory_budget_mb()));
               sub.add_option("--threads", *threads, "worker threads (0: all cores)");
               sub.add_option("--top-k", *top_k, "verified µGraphs to keep");
               sub.add_option("--seed", *seed, "seed of the verifier's random tests");
               sub.add_option("--checkpoint", *checkpoint,
                              "save progress here periodically; rerunning resumes from it");
               sub.add_flag("--progress", *progress, "progress on stderr even when not a terminal");
               sub.add_flag("--quiet", *quiet, "no progress output");
               sub.add_flag("--no-pruning", *no_pruning, "disable abstract-expression pruning");
               return [=]() -> int {
                 SearchConfig config = config_path->empty() ? SearchConfig{} : SearchConfig::load(*config_path);
                 if (!target->empty()) config.target = *target;
                 target_by_name(config.target);  // a clear error for an unknown name
                 if (*time_budget >= 0) config.time_budget_s = *time_budget;
                 if (*states >= 0) config.state_budget = *states;
                 if (memory_option->count() > 0) {
                   if (*memory_budget < 0)
                     throw UserError(fmt::format(
                         "--memory-budget must be a non-negative number of megabytes (0: "
                         "unlimited), got {}",
                         *memory_budget));
                   config.memory_budget_mb = *memory_budget;
                 }
                 if (*threads >= 0) config.threads = *threads;
                 if (*top_k >= 0) config.top_k = std::max(1, *top_k);
                 if (*seed >= 0) config.seed = static_cast<uint64_t>(*seed);
                 if (*no_pruning) config.pruning = false;
                 config.checkpoint_path = *checkpoint;
                 bool show = !*quiet && (*progress || isatty(STDERR_FILENO));
                 return run_optimize(*file, *out, config, show);
               };
             });

}  // namespace
}  // namespace weft::cli
