// The result files of an optimize run; their schema is documented in docs/search.md.
#include "driver/optimize_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "ir/printer.h"

namespace weft {
namespace {

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  if (!out) throw UserError(SourceLoc{path.string()}, "cannot write this file");
}

// Megabytes (2^20 bytes) to one decimal.
double megabytes(int64_t bytes) {
  return std::round(static_cast<double>(bytes) / (int64_t{1} << 20) * 10) / 10;
}

// Seconds as microseconds to three decimals.
double microseconds(double seconds) {
  return std::round(seconds * 1e9) / 1e3;
}

std::string gigabytes(int64_t bytes) {
  return fmt::format("{:.2f}", static_cast<double>(bytes) / (int64_t{1} << 30));
}

std::string si(double v) {
  if (v >= 1e9) return fmt::format("{:.2f}G", v / 1e9);
  if (v >= 1e6) return fmt::format("{:.2f}M", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.1f}k", v / 1e3);
  return fmt::format("{:.0f}", v);
}

std::string top_file_name(size_t index) {
  return fmt::format("top-{}.weft", index + 1);
}

}  // namespace

std::string error_bound_text(double bound) {
  if (bound <= 0) return "0";
  return fmt::format("2^{:.0f}", std::floor(std::log2(bound)));
}

std::string candidate_file_text(const RankedCandidate& c, int rank, const std::string& target) {
  if (c.verification.tests == 0 && c.verification.bound == 0)
    return fmt::format(
               "# weft optimize: rank {}, predicted {:.2f} us on {}\n# the input program "
               "itself ({}): equivalent without a test\n",
               rank, c.predicted_s * 1e6, target, c.origin) +
           print_graph(c.graph);
  return fmt::format(
             "# weft optimize: rank {}, predicted {:.2f} us on {}\n# verified: equivalent to the "
             "input program with error bound {} ({} finite-field tests); f32 error {:.2e}\n",
             rank, c.predicted_s * 1e6, target, error_bound_text(c.verification.bound),
             c.verification.tests, c.verification.f32_error) +
         print_graph(c.graph);
}

std::string optimize_summary_text(const OptimizeResult& r, const std::string& name,
                                  const std::string& out_dir) {
  const SearchConfig& config = r.config;
  std::string s = fmt::format("weft optimize: {} on {}\n", name, config.target);
  s += fmt::format(
      "  search: {} states in {:.1f} s (stop: {}{}), {} pruned by abstract expressions\n", r.states,
      r.search_s, stop_reason_name(r.stop), r.resumed ? ", resumed" : "", r.pruned_expr);
  s += fmt::format(
      "  anytime: {} baselines before the search; kernel-graph sizes reached {}, {} cut "
      "by their time share, {} converged; fastest candidate found at {:.1f} s\n",
      r.baselines, r.levels_reached, r.levels_cut, r.levels_converged, r.best_found_s);
  for (size_t i = 0; i < r.partition.size(); ++i) {
    const OptimizeResult::Part& p = r.partition[i];
    s += fmt::format(
        "  part {}/{} ({}: {}): {}\n", i + 1, r.partition.size(), p.rule, fmt::join(p.ops, " "),
        p.searched ? fmt::format("{:.2f} -> {:.2f} us ({}, stop: {})", p.input_predicted_s * 1e6,
                                 p.best_predicted_s * 1e6, p.best_origin, stop_reason_name(p.stop))
                   : fmt::format("{:.2f} us, kept as it is", p.input_predicted_s * 1e6));
  }
  for (size_t i = 0; i < r.seeds.size(); ++i) {
    const OptimizeResult::Part& p = r.seeds[i];
    s += fmt::format(
        "  seed {}/{} ({}: {}): as built {:.2f} us, searched {:.2f} us ({}, stop: {})\n", i + 1,
        r.seeds.size(), p.rule, fmt::join(p.ops, " "), p.input_predicted_s * 1e6,
        p.best_predicted_s * 1e6, p.best_origin, stop_reason_name(p.stop));
  }
  s += fmt::format(
      "  memory: peak {:.1f} MB accounted of {}{}; peak resident {:.1f} MB\n",
      megabytes(r.peak_accounted_bytes),
      config.memory_budget_mb > 0 ? fmt::format("a {} MB budget", config.memory_budget_mb)
                                  : std::string("no budget"),
      r.memo_truncated > 0
          ? fmt::format(" (memo full: {} schedules' block graphs cut short)", r.memo_truncated)
          : std::string(),
      megabytes(r.peak_rss_bytes));
  s += fmt::format(
      "  candidates: {} equivalent by abstract expression ({} split-reduction), {} with a "
      "constant out of place, {} invalid on {}, {} verified{}, {} rejected, {} {} the top {}\n",
      r.candidates, r.split_candidates, r.screened, r.invalid, config.target, r.verified,
      r.numerically_rejected > 0
          ? fmt::format(" ({} of them numerically unacceptable)", r.numerically_rejected)
          : std::string(),
      r.rejected, r.unverified,
      r.verification_stopped ? "left unverified at the time budget, short of" : "not needed for",
      config.top_k);
  if (!r.oracle_complete)
    s += fmt::format(
        "  oracle: saturation stopped at a limit, so nothing was pruned; {} candidates it did not "
        "prove were ranked after the rest\n",
        r.unproven);
  s += fmt::format("  input program: {:.2f} us predicted; roofline floor {:.2f} us\n",
                   r.program_predicted_s * 1e6, r.roofline_s * 1e6);
  for (const auto& [why, n] : r.rejections) s += fmt::format("  rejected {}x: {}\n", n, why);
  if (r.search_budget_s > 0)
    s += fmt::format(
        "  time budget: {:.1f} s for the search, {:.1f} s kept for verification (one test of the "
        "input program: {:.2f} s); verification took {:.1f} s{}\n",
        r.search_budget_s, r.verify_reserve_s, r.test_s, r.verify_s,
        r.verification_stopped
            ? fmt::format(
                  ", stopped at the time budget: {} of top {} verified{}", r.top.size(),
                  config.top_k,
                  r.abandoned > 0 ? fmt::format(" ({} cut in flight)", r.abandoned) : std::string())
            : std::string());
  if (r.top.empty()) return s + "  no verified µGraph found within the budget\n";
  const RankedCandidate& best = r.top[0];
  s += fmt::format(
      "  best µGraph: {:.2f} us predicted ({} kernel op{}, from {}), {:.2f}x the input program; "
      "error bound {} after {} tests, f32 error {:.1e}\n",
      best.predicted_s * 1e6, best.graph.ops.size(), best.graph.ops.size() == 1 ? "" : "s",
      best.origin, r.program_predicted_s / best.predicted_s,
      error_bound_text(best.verification.bound), best.verification.tests,
      best.verification.f32_error);
  s += fmt::format("  wrote {}/best.weft, top-1..{}.weft, summary.json, timing.json\n", out_dir,
                   r.top.size());
  s += fmt::format("  picture: weft dot {}/best.weft -o {}/best.svg\n", out_dir, out_dir);
  return s;
}

std::string optimize_progress_line(const OptimizeProgress& p) {
  if (p.phase == OptimizeProgress::Phase::verify)
    return fmt::format("[{:6.1f}s] verify: {} of top {} verified, {} candidates checked{}",
                       p.elapsed_s, p.kept, p.wanted, p.checked,
                       p.verify_stopped ? "; verification stopped at the time budget" : "");
  return fmt::format(
      "[{:6.1f}s]{} states {} ({}/s) pruned {} block graphs {} candidates {} best {} mem {}/{} GB",
      p.elapsed_s,
      p.parts > 0 ? fmt::format(" {} {}/{}", p.seed ? "seed" : "part", p.part, p.parts)
                  : std::string(),
      si(static_cast<double>(p.states)),
      si(static_cast<double>(p.states) / std::max(p.elapsed_s, 1e-9)),
      si(static_cast<double>(p.pruned)), si(static_cast<double>(p.block_graphs)), p.candidates,
      p.best_predicted_s > 0 ? fmt::format("{:.1f} us", p.best_predicted_s * 1e6)
                             : std::string("-"),
      gigabytes(p.memory_held_bytes),
      p.memory_budget_bytes > 0 ? gigabytes(p.memory_budget_bytes) : std::string("-"));
}

nlohmann::json optimize_summary_json(const OptimizeResult& r, const std::string& input_file) {
  nlohmann::json top = nlohmann::json::array();
  for (size_t i = 0; i < r.top.size(); ++i) {
    const RankedCandidate& c = r.top[i];
    top.push_back(
        {{"file", top_file_name(i)},
         {"origin", c.origin},
         {"predicted_us", microseconds(c.predicted_s)},
         {"kernels", c.graph.ops.size()},
         // null for the input program itself, equivalent without a test
         {"error_bound_log2", c.verification.bound > 0
                                  ? nlohmann::json(std::floor(std::log2(c.verification.bound)))
                                  : nlohmann::json(nullptr)},
         {"tests", c.verification.tests},
         {"f32_error", c.verification.f32_error}});
  }
  nlohmann::json summary = {{"program", r.program.name},
                            {"input", std::filesystem::path(input_file).filename().string()},
                            {"config", r.config.to_json()},
                            {"stop_reason", stop_reason_name(r.stop)},
                            {"levels_reached", r.levels_reached},
                            {"levels_cut_by_time", r.levels_cut},
                            {"levels_converged", r.levels_converged},
                            {"baselines", r.baselines},
                            {"memory_budget_mb", r.config.memory_budget_mb},
                            {"peak_accounted_memory_mb", megabytes(r.peak_accounted_bytes)},
                            {"memo_schedules_truncated", r.memo_truncated},
                            {"states", r.states},
                            {"pruned_by_expression", r.pruned_expr},
                            {"pruned_by_op_budget", r.pruned_bound},
                            {"block_graphs", r.block_graphs},
                            {"candidates", r.candidates},
                            {"split_candidates", r.split_candidates},
                            {"invalid_on_target", r.invalid},
                            {"constant_out_of_place", r.screened},
                            {"unproven_by_oracle", r.unproven},
                            {"verified", r.verified},
                            {"rejected", r.rejected},
                            {"numerically_rejected", r.numerically_rejected},
                            {"unverified_below_top_k", r.unverified},
                            {"verification_stopped_at_time_budget", r.verification_stopped},
                            {"verifications_cut_at_time_budget", r.abandoned},
                            {"finite_field_tests", r.tests},
                            {"oracle_complete", r.oracle_complete},
                            {"input_predicted_us", microseconds(r.program_predicted_s)},
                            {"roofline_floor_us", microseconds(r.roofline_s)},
                            {"rejections", r.rejections},
                            {"top", top}};
  if (!r.partition.empty()) {
    nlohmann::json parts = nlohmann::json::array();
    for (const OptimizeResult::Part& p : r.partition)
      parts.push_back({{"computes", p.ops},
                       {"rule", p.rule},
                       {"searched", p.searched},
                       {"stop_reason", stop_reason_name(p.stop)},
                       {"states", p.states},
                       {"candidates", p.candidates},
                       {"input_predicted_us", microseconds(p.input_predicted_s)},
                       {"best_predicted_us", microseconds(p.best_predicted_s)},
                       {"best_origin", p.best_origin}});
    summary["partition"] = parts;
  }
  if (!r.seeds.empty()) {
    nlohmann::json seeds = nlohmann::json::array();
    for (const OptimizeResult::Part& p : r.seeds)
      seeds.push_back({{"computes", p.ops},
                       {"baseline", p.rule},
                       {"stop_reason", stop_reason_name(p.stop)},
                       {"states", p.states},
                       {"candidates", p.candidates},
                       {"as_built_predicted_us", microseconds(p.input_predicted_s)},
                       {"searched_predicted_us", microseconds(p.best_predicted_s)},
                       {"searched_origin", p.best_origin}});
    summary["seeds"] = seeds;
  }
  if (!r.top.empty())
    summary["predicted_speedup"] =
        std::round(r.program_predicted_s / r.top[0].predicted_s * 1000) / 1000;
  return summary;
}

nlohmann::json optimize_timing_json(const OptimizeResult& r) {
  nlohmann::json parts = nlohmann::json::array();
  for (const OptimizeResult::Part& p : r.partition)
    parts.push_back({{"budget_s", p.budget_s}, {"search_s", p.search_s}});
  nlohmann::json seeds = nlohmann::json::array();
  for (const OptimizeResult::Part& p : r.seeds)
    seeds.push_back({{"budget_s", p.budget_s}, {"search_s", p.search_s}});
  nlohmann::json timing = {
      {"search_s", r.search_s},
      {"partition", parts},
      {"seeds", seeds},
      {"verify_s", r.verify_s},
      {"wall_s", r.wall_s},
      {"search_budget_s", r.search_budget_s},
      {"verify_reserve_s", r.verify_reserve_s},
      {"search_late_s", r.search_late_s},
      {"one_test_s", r.test_s},
      {"states_per_s", r.search_s > 0 ? static_cast<double>(r.states) / r.search_s : 0.0},
      {"peak_rss_search_mb", megabytes(r.peak_rss_bytes)},
      {"resumed_from_checkpoint", r.resumed},
      {"verdicts_reused_from_checkpoint", r.verdicts_reused}};
  // When the run found the best verified µGraph (null: none), and when the fastest candidate,
  // verified or not, last improved. Timing-dependent, so they are here and not in the
  // byte-stable summary.json.
  timing["best_found_s"] = nullptr;
  if (!r.top.empty()) timing["best_found_s"] = std::round(r.top[0].found_s * 1000) / 1000;
  timing["fastest_candidate_found_s"] = std::round(r.best_found_s * 1000) / 1000;
  return timing;
}

std::vector<std::string> write_optimize_report(const std::string& dir, const OptimizeResult& r,
                                               const std::string& input_file) {
  std::filesystem::path out(dir);
  std::error_code error;
  std::filesystem::create_directories(out, error);
  if (error)
    throw UserError(SourceLoc{dir},
                    fmt::format("cannot create the output directory ({})", error.message()));
  std::vector<std::string> written;
  auto write = [&](const std::string& name, const std::string& text) {
    write_file(out / name, text);
    written.push_back(name);
  };
  for (size_t i = 0; i < r.top.size(); ++i) {
    std::string text = candidate_file_text(r.top[i], static_cast<int>(i + 1), r.config.target);
    write(top_file_name(i), text);
    if (i == 0) write("best.weft", text);
  }
  write("summary.json", optimize_summary_json(r, input_file).dump(2) + "\n");
  write("timing.json", optimize_timing_json(r).dump(2) + "\n");
  return written;
}

}  // namespace weft
