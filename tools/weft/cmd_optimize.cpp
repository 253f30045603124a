// `weft optimize`: flags → driver/optimize → result files (driver/optimize_report) and a summary
// on stdout; progress on stderr; the first Ctrl-C stops the search and keeps what it found.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
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

// The progress line: redrawn in place on a terminal, one line per report otherwise. The search's
// last report and each verification report end their line on a terminal too (verification
// reports are seconds apart, and the summary follows the last one).
void print_progress(const OptimizeProgress& p, bool tty) {
  const bool last = p.search_done || p.phase == OptimizeProgress::Phase::verify;
  std::cerr << (tty ? "\r" : "") << optimize_progress_line(p) << (tty && !last ? "" : "\n")
            << std::flush;
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

// A configuration field's flag (search/config_fields.def) and the text given for it.
struct ConfigFlag {
  const SearchConfigField* field;
  std::string text;
  CLI::Option* option = nullptr;
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
  std::cout << optimize_summary_text(r, program.name.empty() ? file : program.name, out_dir);
  return r.stop == StopReason::interrupted ? kInterruptedExit : 0;
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
                     config.set(flag.field->key, config_flag_value(*flag.field, flag.text),
                                SourceLoc{}, std::string(flag.field->flag));
                 target_by_name(config.target);  // a clear error for an unknown name
                 bool show = !*quiet && (*progress || isatty(STDERR_FILENO));
                 return run_optimize(*file, *out, config, *checkpoint, show);
               };
             });

}  // namespace
}  // namespace weft::cli
