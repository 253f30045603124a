// `weft optimize`: flags → driver/optimize → result files (driver/optimize_report) and a summary
// on stdout; progress on stderr; the first Ctrl-C stops the search and keeps what it found.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <iostream>
#include <list>

#include "core/target.h"
#include "driver/optimize.h"
#include "driver/optimize_report.h"
#include "tools/weft/command.h"

namespace weft::cli {
namespace {

// Exit status of a run the user interrupted (128 + SIGINT); its results are written all the same.
constexpr int kInterruptedExit = 130;

double megabytes(int64_t bytes) {
  return std::round(static_cast<double>(bytes) / (int64_t{1} << 20) * 10) / 10;
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

// The search's progress line: redrawn in place on a terminal, one line per report otherwise.
void print_progress(const OptimizeProgress& p, bool tty) {
  if (p.phase != OptimizeProgress::Phase::search) return;
  std::cerr
      << fmt::format(
             "{}[{:6.1f}s]{} states {} ({}/s) pruned {} block graphs {} candidates {} best {} "
             "mem {}/{} GB{}",
             tty ? "\r" : "", p.elapsed_s,
             p.parts > 0 ? fmt::format(" part {}/{}", p.part, p.parts) : std::string(),
             si(static_cast<double>(p.states)),
             si(static_cast<double>(p.states) / std::max(p.elapsed_s, 1e-9)),
             si(static_cast<double>(p.pruned)), si(static_cast<double>(p.block_graphs)),
             p.candidates,
             p.best_predicted_s > 0 ? fmt::format("{:.1f} us", p.best_predicted_s * 1e6)
                                    : std::string("-"),
             gigabytes(p.memory_held_bytes),
             p.memory_budget_bytes > 0 ? gigabytes(p.memory_budget_bytes) : std::string("-"),
             tty ? "" : "\n")
      << (p.search_done && tty ? "\n" : "") << std::flush;
}

// SIGINT while a search runs: the first sets the flag (and restores the default action, so a
// second one ends the process); the driver polls it through OptimizeOptions::should_stop.
std::atomic<bool> interrupt_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");

void on_interrupt(int) {
  interrupt_requested.store(true);
}

class InterruptHook {
 public:
  InterruptHook() {
    interrupt_requested.store(false);
    struct sigaction action {};
    action.sa_handler = on_interrupt;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESETHAND;
    sigaction(SIGINT, &action, &previous_);
  }
  ~InterruptHook() { sigaction(SIGINT, &previous_, nullptr); }
  InterruptHook(const InterruptHook&) = delete;
  InterruptHook& operator=(const InterruptHook&) = delete;

  // The driver's should_stop: says once on stderr what happens next.
  bool requested() {
    if (!interrupt_requested.load()) return false;
    if (!announced_.exchange(true))
      std::cerr << "\nweft optimize: interrupted; ranking and verifying the candidates found so "
                   "far (Ctrl-C again to quit)\n"
                << std::flush;
    return true;
  }

 private:
  struct sigaction previous_ {};
  std::atomic<bool> announced_{false};
};

void print_summary(const OptimizeResult& r, const std::string& name, const std::string& out_dir) {
  const SearchConfig& config = r.config;
  fmt::print("weft optimize: {} on {}\n", name, config.target);
  fmt::print("  search: {} states in {:.1f} s (stop: {}{}), {} pruned by abstract expressions\n",
             r.states, r.search_s, search_stop_name(r.stop), r.resumed ? ", resumed" : "",
             r.pruned_expr);
  fmt::print(
      "  anytime: {} baselines before the search; kernel-graph sizes reached {}, {} cut "
      "by their time share, {} converged; best found at {:.1f} s\n",
      r.baselines, r.levels_reached, r.levels_cut, r.levels_converged, r.best_found_s);
  for (size_t i = 0; i < r.partition.size(); ++i) {
    const OptimizeResult::Part& p = r.partition[i];
    fmt::print(
        "  part {}/{} ({}: {}): {}\n", i + 1, r.partition.size(), p.rule, fmt::join(p.ops, " "),
        p.searched ? fmt::format("{:.2f} -> {:.2f} us ({}, stop: {})", p.input_predicted_s * 1e6,
                                 p.best_predicted_s * 1e6, p.best_origin, search_stop_name(p.stop))
                   : fmt::format("{:.2f} us, kept as it is", p.input_predicted_s * 1e6));
  }
  fmt::print(
      "  memory: peak {:.1f} MB accounted of {}{}; peak resident {:.1f} MB\n",
      megabytes(r.peak_accounted_bytes),
      config.memory_budget_mb > 0 ? fmt::format("a {} MB budget", config.memory_budget_mb)
                                  : std::string("no budget"),
      r.memo_truncated > 0
          ? fmt::format(" (memo full: {} schedules' block graphs cut short)", r.memo_truncated)
          : std::string(),
      megabytes(r.peak_rss_bytes));
  fmt::print(
      "  candidates: {} equivalent by abstract expression ({} split-reduction), {} invalid "
      "on {}, {} verified, {} rejected, {} not needed for the top {}\n",
      r.candidates, r.split_candidates, r.invalid, config.target, r.verified, r.rejected,
      r.unverified, config.top_k);
  fmt::print("  input program: {:.2f} us predicted; roofline floor {:.2f} us\n",
             r.program_predicted_s * 1e6, r.roofline_s * 1e6);
  for (const auto& [why, n] : r.rejections) fmt::print("  rejected {}x: {}\n", n, why);
  if (r.top.empty()) {
    fmt::print("  no verified µGraph found within the budget\n");
    return;
  }
  const RankedCandidate& best = r.top[0];
  fmt::print(
      "  best µGraph: {:.2f} us predicted ({} kernel op{}, from {}), {:.2f}x the input program; "
      "error bound {} after {} tests, f32 error {:.1e}\n",
      best.predicted_s * 1e6, best.graph.ops.size(), best.graph.ops.size() == 1 ? "" : "s",
      best.origin, r.program_predicted_s / best.predicted_s,
      error_bound_text(best.verification.bound), best.verification.tests,
      best.verification.f32_error);
  fmt::print("  wrote {}/best.weft, top-1..{}.weft, summary.json, timing.json\n", out_dir,
             r.top.size());
  fmt::print("  picture: weft dot {}/best.weft -o {}/best.svg\n", out_dir, out_dir);
}

// A configuration field's flag (search/config_fields.def) and the text given for it.
struct ConfigFlag {
  const SearchConfigField* field;
  std::string text;
  CLI::Option* option = nullptr;

  // The flag's value as JSON, for SearchConfig::set (which checks it as it checks a file's).
  nlohmann::json value() const {
    switch (field->form) {
      case SearchConfigField::Form::text:
        return text;
      case SearchConfigField::Form::flag:
        return !field->flag.starts_with("--no-");
      case SearchConfigField::Form::json: {
        nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
        return j.is_discarded() ? nlohmann::json(text) : j;
      }
    }
    return nullptr;
  }
};

// Adds an option for every configuration field that has a flag.
std::shared_ptr<std::list<ConfigFlag>> add_config_flags(CLI::App& sub) {
  auto flags = std::make_shared<std::list<ConfigFlag>>();  // stable addresses for CLI11
  nlohmann::json defaults = SearchConfig{}.to_json();
  for (const SearchConfigField& f : search_config_fields()) {
    if (f.flag.empty()) continue;
    ConfigFlag& flag = flags->emplace_back(ConfigFlag{&f, ""});
    std::string name(f.flag);
    if (f.form == SearchConfigField::Form::flag) {
      bool sets = !f.flag.starts_with("--no-");
      flag.option =
          sub.add_flag(name)->description(fmt::format("{} {}", sets ? "enable" : "disable", f.doc));
    } else {
      const nlohmann::json& d = defaults.at(std::string(f.key));
      flag.option = sub.add_option(name, flag.text, std::string(f.doc))
                        ->type_name(d.is_number_integer() ? "INT"
                                    : d.is_number()       ? "FLOAT"
                                                          : "TEXT")
                        ->default_str(d.is_string() ? d.get<std::string>() : d.dump());
    }
  }
  return flags;
}

int run_optimize(const std::string& file, const std::string& out_dir, const SearchConfig& config,
                 const std::string& checkpoint, bool progress) {
  Graph program = load_graph(file);
  bool tty = isatty(STDERR_FILENO);
  InterruptHook interrupt;
  OptimizeOptions options;
  options.checkpoint_path = checkpoint;
  if (progress) options.on_progress = [tty](const OptimizeProgress& p) { print_progress(p, tty); };
  options.should_stop = [&interrupt] { return interrupt.requested(); };
  OptimizeResult r = optimize(program, config, options);
  write_optimize_report(out_dir, r, file);
  print_summary(r, program.name.empty() ? file : program.name, out_dir);
  return r.stop == SearchStop::interrupted ? kInterruptedExit : 0;
}

Register reg("optimize", "Search for the fastest verified µGraph equivalent to a program",
             [](CLI::App& sub) {
               auto file = std::make_shared<std::string>();
               auto out = std::make_shared<std::string>("weft-out");
               auto config_path = std::make_shared<std::string>();
               auto checkpoint = std::make_shared<std::string>();
               auto progress = std::make_shared<bool>(false);
               auto quiet = std::make_shared<bool>(false);
               sub.add_option("file", *file, "input program (.weft)")->required();
               sub.add_option("-o,--output", *out, "output directory")->capture_default_str();
               sub.add_option("--config", *config_path,
                              "JSON file overriding the search configuration");
               auto flags = add_config_flags(sub);
               sub.add_option("--checkpoint", *checkpoint,
                              "save progress here periodically; rerunning resumes from it");
               sub.add_flag("--progress", *progress, "progress on stderr even when not a terminal");
               sub.add_flag("--quiet", *quiet, "no progress output");
               return [=]() -> int {
                 SearchConfig config =
                     config_path->empty() ? SearchConfig{} : SearchConfig::load(*config_path);
                 for (const ConfigFlag& flag : *flags)
                   if (flag.option->count() > 0)
                     config.set(flag.field->key, flag.value(), SourceLoc{},
                                std::string(flag.field->flag));
                 target_by_name(config.target);  // a clear error for an unknown name
                 bool show = !*quiet && (*progress || isatty(STDERR_FILENO));
                 return run_optimize(*file, *out, config, *checkpoint, show);
               };
             });

}  // namespace
}  // namespace weft::cli
