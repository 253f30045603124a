// The optimize pipeline, step by step: expand, build the oracle, search, check, rank, verify.
#include "driver/optimize.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <tuple>

#include "core/parallel.h"
#include "core/system_memory.h"
#include "cost/cost_model.h"
#include "cost/roofline.h"
#include "ir/expand_composites.h"
#include "ir/printer.h"
#include "ir/validate.h"
#include "search/absexpr_oracle.h"
#include "search/baselines.h"
#include "search/constant_screen.h"
#include "search/kernel_search.h"
#include "search/memory_account.h"
#include "search/merge_kernels.h"
#include "search/partition.h"
#include "search/seed_neighbourhoods.h"
#include "verify/equivalence.h"

namespace weft {
namespace {

// How often the helper thread polls OptimizeOptions::should_stop.
constexpr double kStopPollPeriodS = 0.05;

// Runs `tick` every `period_s` on a helper thread until destroyed.
class Ticker {
 public:
  Ticker(double period_s, std::function<void()> tick) : tick_(std::move(tick)) {
    thread_ = std::thread([this, period_s] {
      std::unique_lock<std::mutex> lock(mu_);
      while (!done_) {
        cv_.wait_for(lock, std::chrono::duration<double>(period_s));
        if (done_) break;
        lock.unlock();
        tick_();
        lock.lock();
      }
    });
  }
  ~Ticker() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::function<void()> tick_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

VerifyOptions verify_options(const SearchConfig& config) {
  VerifyOptions v;
  v.target_error = config.target_error;
  v.seed = config.seed;
  v.threads = config.threads > 0 ? config.threads : hardware_threads();
  return v;
}

// The verdict of the input program itself: equivalent to itself with no test needed, and none
// can fail (a program can be too deep for the finite-field test: docs/verification.md).
VerifiedRecord identical_to_input() {
  VerifiedRecord same;
  same.equivalent = same.numerically_ok = true;
  same.bound = 0;
  same.detail = "identical to the input program";
  return same;
}

// nullopt: abandoned at `give_up_at` (no verdict: nothing to record or checkpoint).
std::optional<VerifiedRecord> verify_candidate(const EquivalenceChecker& checker,
                                               const Graph& candidate,
                                               std::chrono::steady_clock::time_point give_up_at =
                                                   std::chrono::steady_clock::time_point::max()) {
  VerifiedRecord rec;
  VerifyResult v;
  try {
    v = checker.check(candidate, give_up_at);
    if (v.verdict == Verdict::abandoned) return std::nullopt;
  } catch (const UserError& e) {
    // A limit of the verifier (e.g. a program too deep for the finite-field test), not a verdict
    // on the candidate: reported as such, and the candidate is not kept.
    rec.detail = fmt::format("verifier limit: {}", e.message());
    return rec;
  }
  rec.equivalent = v.verdict == Verdict::equivalent;
  rec.bound = v.bound;
  rec.tests = v.tests_run;
  rec.numerically_ok = rec.equivalent && (!v.floats || v.floats->acceptable);
  if (v.floats)
    for (const OutputFloatError& e : v.floats->outputs)
      rec.f32_error = std::max(rec.f32_error, e.f32.scaled_error);
  rec.detail =
      v.verdict == Verdict::equivalent
          ? ""
          : fmt::format("{}{}", verdict_name(v.verdict), v.message.empty() ? "" : ": " + v.message);
  return rec;
}

// The candidates found so far, from every source (baselines, the search, stitched partitions):
// checked on the target, costed, deduplicated by text, with the best predicted time and when it
// last improved (the anytime search's convergence clock).
class CandidatePool {
 public:
  CandidatePool(const Target& target, MemoryAccount& memory, const StopSignal& clock,
                ConstantScreen& screen)
      : target_(target), memory_(memory), clock_(clock), screen_(screen) {}

  void add(Graph&& g, const std::string& origin) {
    // A constant out of place: never a candidate, so it neither takes a finite-field test nor
    // counts as an improvement for convergence (search/constant_screen.h).
    if (!screen_.may_be_equivalent(g)) {
      std::lock_guard<std::mutex> lock(mu_);
      ++screened_;
      return;
    }
    RankedCandidate c;
    c.text = print_graph(g, false);
    c.origin = origin;
    if (!check_graph(g, target_).empty()) {
      std::lock_guard<std::mutex> lock(mu_);
      ++invalid_;
      return;
    }
    c.predicted_s = predict(g, target_).total_s;
    c.found_s = clock_.elapsed_s();
    c.unproven = proven_ && !proven_(g);
    c.graph = std::move(g);
    std::lock_guard<std::mutex> lock(mu_);
    if (!seen_.insert(c.text).second) return;
    unproven_ += c.unproven;
    // An unproven candidate is no improvement: with a limited oracle the cheapest of them are
    // mostly wrong, and the convergence clock must not stop on them.
    if (!c.unproven && (best_s_ == 0 || c.predicted_s < best_s_)) {
      best_s_ = c.predicted_s;
      improved_s_ = clock_.elapsed_s();
    }
    // The candidate (graph and text), its text again in `seen_`, and the list's growth.
    int64_t bytes = heap_bytes(c.graph) + 2 * heap_bytes(c.text) +
                    map_node_bytes(sizeof(std::string)) - heap_bytes(found_);
    found_.push_back(std::move(c));
    memory_.add(bytes + heap_bytes(found_));
    memory_.sample();  // the kernel search's thread: a deterministic point
  }

  int64_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int64_t>(found_.size());
  }
  int64_t invalid() const {
    std::lock_guard<std::mutex> lock(mu_);
    return invalid_;
  }
  int64_t screened() const {
    std::lock_guard<std::mutex> lock(mu_);
    return screened_;
  }
  int64_t unproven() const {
    std::lock_guard<std::mutex> lock(mu_);
    return unproven_;
  }
  // From now on candidates are marked unproven when `proven` says so (an incomplete oracle's
  // AbsExprOracle::proven); empty: none is. Set while nothing adds.
  void prove_with(std::function<bool(const Graph&)> proven) { proven_ = std::move(proven); }
  double best_s() const {
    std::lock_guard<std::mutex> lock(mu_);
    return best_s_;
  }
  double improved_s() const {
    std::lock_guard<std::mutex> lock(mu_);
    return improved_s_;
  }
  // Every candidate, proven ones first, fastest first (ties by text, so the order never depends
  // on timing).
  std::vector<RankedCandidate> take_ranked() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<RankedCandidate> out = std::move(found_);
    std::sort(out.begin(), out.end(), [](const RankedCandidate& a, const RankedCandidate& b) {
      return std::tie(a.unproven, a.predicted_s, a.text) <
             std::tie(b.unproven, b.predicted_s, b.text);
    });
    return out;
  }

 private:
  const Target& target_;
  MemoryAccount& memory_;
  const StopSignal& clock_;
  ConstantScreen& screen_;
  mutable std::mutex mu_;
  std::vector<RankedCandidate> found_;
  std::set<std::string> seen_;
  double best_s_ = 0, improved_s_ = 0;
  int64_t invalid_ = 0;
  int64_t screened_ = 0;
  int64_t unproven_ = 0;
  std::function<bool(const Graph&)> proven_;
};

// What the search steps share.
struct Run {
  const Graph& program;
  const SearchConfig& config;  // the user's (the search's budget is stop.budget())
  const OptimizeOptions& options;
  const Target& target;
  int threads;
  StopSignal& stop;
  MemoryAccount& memory;
  CandidatePool& pool;
  OptimizeResult& result;
  CheckpointData& checkpoint;
  // The whole program's search state, kept for the checkpoints saved while verifying (none when
  // the program was searched in parts).
  BlockMemo& memo;
  std::unique_ptr<AbsExprOracle>& oracle;
  const EquivalenceChecker& checker;
  const Budget budget;  // the whole run's, verification included
};

void save_checkpoint_verdicts(const Run& run) {
  if (run.oracle)
    save_checkpoint(run.options.checkpoint_path, run.checkpoint, run.memo, *run.oracle);
}

// The search-phase progress of the whole run.
OptimizeProgress pool_progress(const Run& run, const SearchStats* stats) {
  OptimizeProgress p;
  p.elapsed_s = run.stop.elapsed_s();
  if (stats) {
    p.states = stats->states.load();
    p.pruned = stats->pruned_expr.load() + stats->pruned_bound.load();
    p.block_graphs = stats->block_graphs.load();
  } else {
    p.states = run.result.states;
    p.pruned = run.result.pruned_expr + run.result.pruned_bound;
    p.block_graphs = run.result.block_graphs;
  }
  p.memory_held_bytes = run.memory.held();
  p.memory_budget_bytes = run.memory.budget();
  p.candidates = run.pool.size();
  p.best_predicted_s = run.pool.best_s();
  return p;
}

// The stop reason of a finished kernel search: a level cut by its share of the time budget
// means the space was not exhausted; one ended by convergence means the search converged.
StopReason search_end(const StopSignal& stop, const SearchStats& stats) {
  if (stop.search_stopped()) return stop.reason();
  if (stats.levels_cut.load() > 0) return StopReason::time_budget;
  if (stats.levels_converged.load() > 0) return StopReason::converged;
  return StopReason::complete;
}

// The program searched whole: the oracle, the checkpoint, the kernel search.
void search_whole(Run& run) {
  const Graph& program = run.program;
  const SearchConfig& config = run.config;
  const OptimizeOptions& options = run.options;
  OptimizeResult& result = run.result;
  StopSignal& stop = run.stop;
  const std::string& checkpoint_path = options.checkpoint_path;

  // The oracle (one saturated e-graph per output).
  run.oracle = std::make_unique<AbsExprOracle>(program);
  AbsExprOracle& oracle = *run.oracle;
  BlockMemo& memo = run.memo;
  result.oracle_complete = oracle.complete();
  // A limited oracle admits every candidate of the right types: the ones it proves come first.
  if (!result.oracle_complete)
    run.pool.prove_with([&oracle](const Graph& g) { return oracle.proven(g); });

  // Resume from a checkpoint when one matches this program and configuration.
  std::string program_text = print_graph(program, false);
  // The budgets only decide where a search stops (and the memo checkpoints no schedule one cut
  // short), so a run a budget stopped resumes under a larger one: more time, more states, a
  // machine with more memory; and each part of a partitioned run, whose time budget is its share
  // of what is left, resumes at all.
  nlohmann::json searched = config.to_json();
  for (const char* budget :
       {"memory_budget_mb", "time_budget_s", "state_budget", "checkpoint_interval_s"})
    searched.erase(budget);
  run.checkpoint.fingerprint =
      fmt::format("{:016x}", std::hash<std::string>{}(program_text + searched.dump()));
  if (!checkpoint_path.empty())
    result.resumed =
        load_checkpoint(checkpoint_path, run.checkpoint.fingerprint, run.checkpoint, memo, oracle);
  if (result.resumed) run.memory.add(memo.bytes());

  SearchStats stats;
  SearchConstants constants = constants_of(program);
  // Convergence is judged only under a time budget, so unlimited runs stay deterministic.
  const bool converge = config.converge_s > 0 && stop.budget().timed();
  // A callback's exception stops the search and is rethrown once the helper thread is gone.
  std::exception_ptr hook_error;
  {
    double last_checkpoint = 0, last_progress = 0;
    double period = 1.0;
    if (options.on_progress) period = std::min(period, options.progress_interval_s);
    if (!checkpoint_path.empty()) period = std::min(period, config.checkpoint_interval_s);
    if (options.should_stop) period = std::min(period, kStopPollPeriodS);
    if (converge) period = std::min(period, std::max(0.01, config.converge_s / 20));
    Ticker ticker(std::max(period, 0.01), [&] {
      if (hook_error) return;
      try {
        if (options.should_stop && options.should_stop()) stop.stop(StopReason::interrupted);
        // The budget is enforced here too, whatever the search is doing between its own checks.
        stop.should_stop();
        double now = stop.elapsed_s();
        if (converge) stop.end_level_if_converged(run.pool.improved_s(), config.converge_s);
        if (options.on_progress && now - last_progress >= options.progress_interval_s) {
          last_progress = now;
          options.on_progress(pool_progress(run, &stats));
        }
        if (!checkpoint_path.empty() && now - last_checkpoint >= config.checkpoint_interval_s) {
          last_checkpoint = now;
          save_checkpoint(checkpoint_path, run.checkpoint, memo, oracle);
        }
      } catch (...) {
        hook_error = std::current_exception();
        stop.stop(StopReason::interrupted);
      }
    });
    DimClasses classes = analyze_dim_classes(program);
    KernelSearchContext ctx{program, config, run.target, constants,   classes,    oracle,
                            stats,   stop,   memo,       run.threads, &run.memory};
    search_kernel_graphs(ctx, [&](Graph&& g) { run.pool.add(std::move(g), "search"); });
  }
  if (hook_error) std::rethrow_exception(hook_error);
  // Added to the seeds' figures, if any (search_seeds).
  const StopReason end = search_end(stop, stats);
  result.stop = worse_stop(result.stop, end);
  result.states += stats.states.load();
  result.pruned_expr += stats.pruned_expr.load();
  result.pruned_bound += stats.pruned_bound.load();
  result.block_graphs += stats.block_graphs.load();
  result.candidates += stats.candidates.load();
  result.split_candidates += stats.split_candidates.load();
  result.levels_reached = std::max(result.levels_reached, stats.levels_reached.load());
  result.levels_cut += stats.levels_cut.load();
  result.levels_converged += stats.levels_converged.load();
  result.peak_accounted_bytes = std::max(
      result.peak_accounted_bytes, end == StopReason::complete
                                       ? run.memory.sampled_peak()
                                       : std::max(run.memory.sampled_peak(), run.memory.peak()));
  for (const auto& [key, results] : memo.snapshot()) {
    std::lock_guard<std::mutex> lock(results->mu);
    for (bool t : results->truncated) result.memo_truncated += t;
  }
  if (!checkpoint_path.empty()) save_checkpoint(checkpoint_path, run.checkpoint, memo, oracle);
}

// The least time a part is searched for when the search's budget is (nearly) spent.
constexpr double kLeastPartBudgetS = 0.01;

// A subprogram of the run's (a part, a seed's neighbourhood) optimized on its own under `sub`
// (its baselines, search and verification against it; its top 1), its search figures added to
// the run's; progress reported as subprogram `index` of `count` (1-based). `checkpoint_suffix`
// names its checkpoint next to the run's: its fingerprint is its program and configuration, so a
// resumed run loses none of its searches.
OptimizeResult optimize_subprogram(Run& run, const Graph& subprogram, SearchConfig sub,
                                   const std::string& checkpoint_suffix, int index, int count,
                                   bool seed) {
  OptimizeResult& result = run.result;
  sub.top_k = 1;
  OptimizeOptions sub_options;
  if (!run.options.checkpoint_path.empty())
    sub_options.checkpoint_path = run.options.checkpoint_path + checkpoint_suffix;
  sub_options.progress_interval_s = run.options.progress_interval_s;
  sub_options.should_stop = run.options.should_stop;
  const double offset = run.stop.elapsed_s();
  if (run.options.on_progress)
    sub_options.on_progress = [&, offset, index, count, seed](const OptimizeProgress& p) {
      if (p.phase != OptimizeProgress::Phase::search || p.search_done) return;
      OptimizeProgress q = p;
      q.elapsed_s += offset;
      q.states += result.states;
      q.part = index;
      q.parts = count;
      q.seed = seed;
      run.options.on_progress(q);
    };
  OptimizeResult r = optimize(subprogram, sub, sub_options);
  result.states += r.states;
  result.pruned_expr += r.pruned_expr;
  result.pruned_bound += r.pruned_bound;
  result.block_graphs += r.block_graphs;
  result.candidates += r.candidates;
  result.split_candidates += r.split_candidates;
  result.levels_reached = std::max(result.levels_reached, r.levels_reached);
  result.levels_cut += r.levels_cut;
  result.levels_converged += r.levels_converged;
  result.oracle_complete = result.oracle_complete && r.oracle_complete;
  result.peak_accounted_bytes = std::max(result.peak_accounted_bytes, r.peak_accounted_bytes);
  result.stop = worse_stop(result.stop, r.stop);
  result.resumed = result.resumed || r.resumed;
  if (r.stop == StopReason::interrupted) run.stop.stop(StopReason::interrupted);
  return r;
}

// What a subprogram's optimize reports about itself.
void report_subprogram(const OptimizeResult& r, OptimizeResult::Part& report) {
  report.stop = r.stop;
  report.states = r.states;
  report.candidates = r.candidates + r.baselines;
  report.search_s = r.search_s;
  if (!r.top.empty()) {
    report.best_predicted_s = r.top[0].predicted_s;
    report.best_origin = r.top[0].origin;
  }
}

// The program value names computed by `ops`, in order.
std::vector<std::string> op_value_names(const Graph& program, const std::vector<int>& ops) {
  std::vector<std::string> names;
  for (int op : ops)
    for (ValueId v : program.ops[op].outputs) names.push_back(program.value(v).name);
  return names;
}

// A program too large for the search, in parts: each searchable part is optimized on its own
// (baselines, search, verification against the part) with an equal share of the search's time
// left, and the parts' verified bests are stitched into one candidate of the whole program.
void search_parts(Run& run, const std::vector<SubProgram>& parts) {
  OptimizeResult& result = run.result;
  int left = 0;
  for (const SubProgram& part : parts) left += part.searched;
  std::vector<Graph> replacements;
  for (size_t i = 0; i < parts.size(); ++i) {
    const SubProgram& part = parts[i];
    OptimizeResult::Part report;
    report.ops = op_value_names(run.program, part.ops);
    report.rule = part.rule;
    report.searched = part.searched;
    report.input_predicted_s = predict(part.graph, run.target).total_s;
    report.best_predicted_s = report.input_predicted_s;
    report.best_origin = "input";
    replacements.push_back(part.graph);
    if (part.searched && !run.stop.search_stopped()) {
      SearchConfig sub = run.config;
      sub.time_budget_s = run.stop.budget().share(left, kLeastPartBudgetS).time_s();
      report.budget_s = sub.time_budget_s;
      OptimizeResult r =
          optimize_subprogram(run, part.graph, sub, fmt::format(".part{}", i + 1),
                              static_cast<int>(i + 1), static_cast<int>(parts.size()), false);
      report_subprogram(r, report);
      if (!r.top.empty()) replacements.back() = r.top[0].graph;
      --left;
    }
    result.partition.push_back(std::move(report));
  }
  Graph stitched = stitch(run.program, parts, replacements);
  // The parts' cuts are invisible to their searches: kernels on either side of one that hand
  // each other whole tiles become one kernel (search/merge_kernels.h).
  for (Graph& merged : merge_kernels(stitched)) run.pool.add(std::move(merged), "partition+merged");
  run.pool.add(std::move(stitched), "partition");
}

// The share of the search's time the seeds' searches take before the whole program's search.
constexpr double kSeedShare = 0.5;

// `--baselines seed` (search/seed_neighbourhoods.h): each distinct neighbourhood's subprogram is
// searched alone (baselines off), with an equal share of what is left of the seeds' part of the
// search's time, and its verified best, stitched into every baseline it came from (and with
// kernels merged across the cuts), joins the candidates.
void search_seeds(Run& run, const std::vector<SeedNeighbourhood>& hoods) {
  const Budget phase = run.stop.budget().scaled(kSeedShare);
  std::map<std::string, std::optional<Graph>> best;  // by subprogram text
  std::vector<std::string> texts;
  for (const SeedNeighbourhood& n : hoods)
    texts.push_back(print_graph(n.units[n.searched].graph, false));
  int left = static_cast<int>(std::set<std::string>(texts.begin(), texts.end()).size());
  const int count = left;
  for (size_t i = 0; i < hoods.size(); ++i) {
    const SeedNeighbourhood& n = hoods[i];
    auto found = best.find(texts[i]);
    if (found == best.end()) {
      // Out of time, only neighbourhoods whose subprogram was searched already are stitched.
      if (run.stop.search_stopped() || (phase.timed() && phase.left_s() <= 0)) continue;
      const SubProgram& part = n.units[n.searched];
      OptimizeResult::Part report;
      report.ops = op_value_names(n.base, part.ops);
      report.rule = "seed:" + n.rule;
      report.searched = true;
      report.input_predicted_s = n.baseline_predicted_s;
      report.best_predicted_s = predict(part.graph, run.target).total_s;
      report.best_origin = "input";
      SearchConfig sub = run.config;
      sub.baselines = "off";
      sub.time_budget_s = phase.share(left, kLeastPartBudgetS).time_s();
      report.budget_s = sub.time_budget_s;
      const int index = count - left + 1;
      OptimizeResult r = optimize_subprogram(run, part.graph, sub, fmt::format(".seed{}", index),
                                             index, count, true);
      report_subprogram(r, report);
      run.result.seeds.push_back(std::move(report));
      found = best.emplace(texts[i],
                           r.top.empty() ? std::nullopt : std::optional<Graph>(r.top[0].graph))
                  .first;
      --left;
    }
    if (!found->second) continue;
    Graph stitched = stitch_seed(n, *found->second);
    const std::string origin = "seed:" + n.rule + "+search";
    for (Graph& merged : merge_kernels(stitched))
      run.pool.add(std::move(merged), origin + "+merged");
    run.pool.add(std::move(stitched), origin);
  }
}

// The share of the time budget verification leaves unplanned (docs/search.md, "Time budget").
constexpr double kVerifyMargin = 0.03;

// Verifies the ranked candidates in order until the top-k are proven equivalent and numerically
// acceptable, or until the time budget: once one candidate is in the top, a candidate whose
// verification would end past the budget is not verified (its tests, known from degree bounds,
// times the time per test so far: candidates differ by 3x in tests on gqa), so a cheaper one
// ranked below may still be, and one in flight is cut at the deadline (docs/search.md, "Time
// budget"). Verdicts known already (the checkpoint's, the input program's) cost nothing and are
// always taken. The input program is a baseline candidate, so the run never ends with nothing
// verified; the fastest rule-built candidate is verified first, so it never ends with less.
void rank_and_verify(Run& run, std::vector<RankedCandidate> found) {
  const SearchConfig& config = run.config;
  OptimizeResult& result = run.result;
  auto verify_start = std::chrono::steady_clock::now();
  OptimizeProgress verify_progress = pool_progress(run, nullptr);
  verify_progress.phase = OptimizeProgress::Phase::verify;
  verify_progress.search_done = true;
  verify_progress.wanted = config.top_k;
  const std::string& checkpoint_path = run.options.checkpoint_path;
  // Seconds per finite-field test: the budget plan's estimate until verifications are timed.
  double tested_s = 0;
  int64_t tests_timed = 0;
  // The search stops at its share within the latency of its stop checks, which a starved
  // process (a loaded machine) stretches: verification keeps its whole reserve after it, so the
  // run ends late by what the search was late, never with its candidates left untested for it.
  result.search_late_s = std::max(0.0, -run.stop.budget().left_s());
  // The whole budget, and the plan that ends a margin before it (per-test times spread around
  // their mean, and the caller still writes the results after optimize() returns).
  const Budget whole = run.budget.extended(result.search_late_s);
  const Budget planned = run.budget.scaled(1 - kVerifyMargin).extended(result.search_late_s);
  // Under a time budget the fastest rule-built candidate is verified first and its verdict kept
  // for its place in the ranking: with it in hand the run cannot end on something slower, however
  // many cheaper candidates fail verification before its turn (an oracle whose saturation
  // stopped at a limit admits every candidate of the right types; docs/search.md, "Time budget").
  std::string fallback_text;
  bool fallback_ok = false;
  auto have_answer = [&] { return !result.top.empty() || fallback_ok; };
  auto out_of_time = [&](const Graph& candidate) {
    if (!whole.timed()) return false;
    if (!have_answer()) return whole.left_s() <= 0;
    const double left_s = planned.left_s();
    if (left_s <= 0) return true;
    const double per_test_s =
        tests_timed > 0 ? tested_s / static_cast<double>(tests_timed) : 2 * result.test_s;
    int tests = 0;  // a verifier limit: reported at once, without a test
    try {
      tests = run.checker.tests_needed(candidate);
    } catch (const UserError&) {
    }
    return per_test_s * tests > left_s;
  };
  // A verification in flight is abandoned at the plan's deadline once there is an answer; before
  // that, at the budget itself, after which only free verdicts (the input program, the
  // checkpoint's) are taken: the run still ends with an answer, and on time.
  auto give_up_at = [&] { return (have_answer() ? planned : whole).deadline(); };
  // Verifies `c` (or takes a verdict known already); false when skipped or abandoned for time.
  auto verify = [&](RankedCandidate& c) {
    auto cached = run.checkpoint.verified.find(c.text);
    if (c.graph == run.program) {
      c.verification = identical_to_input();
    } else if (!fallback_text.empty() && c.text == fallback_text) {
      c.verification = cached->second;
      return true;  // counted when it was verified
    } else if (cached != run.checkpoint.verified.end()) {
      c.verification = cached->second;
      ++result.verdicts_reused;
    } else if (out_of_time(c.graph)) {
      result.verification_stopped = true;
      ++result.unverified;
      return false;
    } else {
      const double started_s = run.stop.elapsed_s();
      std::optional<VerifiedRecord> verdict = verify_candidate(run.checker, c.graph, give_up_at());
      if (!verdict) {
        result.verification_stopped = true;
        ++result.unverified;
        ++result.abandoned;
        return false;
      }
      c.verification = std::move(*verdict);
      tested_s += run.stop.elapsed_s() - started_s;
      tests_timed += std::max(c.verification.tests, 1);
      run.checkpoint.verified[c.text] = c.verification;
      if (!checkpoint_path.empty()) save_checkpoint_verdicts(run);
    }
    result.tests += c.verification.tests;
    if (!c.verification.equivalent) {
      ++result.rejected;
      ++result.rejections[c.verification.detail];
    } else {
      ++result.verified;
      result.numerically_rejected += !c.verification.numerically_ok;
    }
    return true;
  };
  // One report per verdict counted, once the top holds what it takes.
  auto report = [&] {
    if (!run.options.on_progress) return;
    ++verify_progress.checked;
    verify_progress.kept = static_cast<int64_t>(result.top.size());
    verify_progress.elapsed_s = run.stop.elapsed_s();
    run.options.on_progress(verify_progress);
  };
  if (whole.timed())
    for (const RankedCandidate& c : found) {
      if (c.origin.rfind("baseline:", 0) != 0 || c.graph == run.program) continue;
      RankedCandidate first = c;  // the ranking is fastest first: the fastest rule-built one
      if (!verify(first))
        --result.unverified;  // its turn in the ranking comes again
      else if (run.checkpoint.verified.count(first.text)) {
        fallback_text = first.text;
        fallback_ok = first.verification.equivalent && first.verification.numerically_ok;
        report();
      }
      break;
    }
  // The slowest of the top (proven candidates come first, so the top is not in time order).
  auto slowest = [&] {
    return std::max_element(result.top.begin(), result.top.end(),
                            [](const RankedCandidate& a, const RankedCandidate& b) {
                              return std::tie(a.predicted_s, a.text) <
                                     std::tie(b.predicted_s, b.text);
                            });
  };
  for (RankedCandidate& c : found) {
    // With the top full, an unproven candidate faster than its slowest is still tried, in the
    // time the plan leaves, and takes that one's place if it is verified.
    const bool full = static_cast<int>(result.top.size()) >= config.top_k;
    if (full && !(c.unproven && c.predicted_s < slowest()->predicted_s)) {
      ++result.unverified;
      continue;
    }
    if (!verify(c)) continue;
    if (c.verification.equivalent && c.verification.numerically_ok) {
      if (full) result.top.erase(slowest());
      result.top.push_back(c);
    }
    if (c.text != fallback_text) report();
  }
  // Proven candidates were verified first: the top is fastest first all the same.
  std::stable_sort(
      result.top.begin(), result.top.end(), [](const RankedCandidate& a, const RankedCandidate& b) {
        return a.predicted_s != b.predicted_s ? a.predicted_s < b.predicted_s : a.text < b.text;
      });
  // A candidate skipped for time whose place a cheaper one below it took: the top-k is full, and
  // verification did not stop short.
  if (static_cast<int>(result.top.size()) >= config.top_k) result.verification_stopped = false;
  if (run.options.on_progress && result.verification_stopped) {
    verify_progress.verify_stopped = true;
    verify_progress.elapsed_s = run.stop.elapsed_s();
    run.options.on_progress(verify_progress);
  }
  result.verify_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - verify_start).count();
}

// How the time budget is split (docs/search.md, "Time budget"): one finite-field test of the
// input program is timed (its results are kept for the first candidate, so nothing is wasted) and
// each of the top-k is expected to cost twice that per test it needs (the candidate evaluated like
// the target, and the target itself the first time a test seed is used; the candidate's f32 and
// f64 float check against the one f64 reference run), the target's own test count standing for
// the candidate's. The search gets the rest, never less than half the budget: the estimate is
// rough, and verification is also cut at the budget itself. Returns the search's budget.
Budget plan_budget(const Budget& budget, int top_k, const EquivalenceChecker& checker,
                   OptimizeResult& result) {
  if (!budget.timed()) return budget;
  const double started_s = budget.elapsed_s();
  const int tests = checker.prepare();
  result.test_s = budget.elapsed_s() - started_s;
  const double wanted_s = top_k * 2.0 * std::max(tests, 1) * result.test_s;
  result.verify_reserve_s = std::min(budget.time_s() / 2, wanted_s);
  constexpr double kLeastSearchS = 1e-3;
  const Budget search = budget.less(result.verify_reserve_s, kLeastSearchS);
  result.search_budget_s = search.time_s();
  return search;
}

}  // namespace

OptimizeResult optimize(const Graph& input, const SearchConfig& given,
                        const OptimizeOptions& options) {
  OptimizeResult result;
  const Target& target = target_by_name(given.target);
  validate(input, target);
  result.program = expand_composites(input);
  const Graph& program = result.program;
  // The program's own elementwise operators join the search's sets (search/partition.h).
  const SearchConfig config = with_program_operators(given, program);
  result.config = config;
  result.program_predicted_s = predict(program, target).total_s;
  result.roofline_s = roofline_floor(program, target);

  const VerifyOptions vopt = verify_options(config);
  EquivalenceChecker checker(program, vopt);
  const Budget budget = config.budget();
  StopSignal stop(budget);
  result.memory_budget_bytes = budget.limits().memory_bytes;
  MemoryAccount memory(result.memory_budget_bytes, stop);
  ConstantScreen screen(program);
  CandidatePool pool(target, memory, stop, screen);
  CheckpointData checkpoint;
  BlockMemo memo;
  std::unique_ptr<AbsExprOracle> oracle;
  Run run{program, config, options,    target, vopt.threads, stop,    memory,
          pool,    result, checkpoint, memo,   oracle,       checker, budget};

  // Step 1: the baselines seed the candidates, so the run has an answer from the start.
  std::vector<BaselineCandidate> baselines =
      baseline_candidates(program, target, fuse_options(config));
  for (const BaselineCandidate& b : baselines) {
    // Off, only the input program stays: an answer no slower than the input, built by no rule.
    if (config.baselines == "off" && b.rule != "input") continue;
    pool.add(Graph(b.graph), "baseline:" + b.rule);
    ++result.baselines;
  }

  // Step 2: the time left for verification.
  stop.set_budget(plan_budget(budget, config.top_k, checker, result));

  // Step 3: the search, of the whole program or of its parts (partition.h).
  std::vector<SubProgram> parts = partition_program(program, config);
  if (parts.size() == 1) {
    // Seeded, the baselines' neighbourhoods first, then the whole program in the time left.
    if (config.baselines == "seed") search_seeds(run, seed_neighbourhoods(baselines, target));
    search_whole(run);
  } else {
    search_parts(run, parts);
  }
  result.invalid = pool.invalid();
  result.screened = pool.screened();
  result.unproven = pool.unproven();
  pool.prove_with({});  // the oracle may be freed below
  if (options.on_progress) {
    OptimizeProgress p = pool_progress(run, nullptr);
    p.search_done = true;
    options.on_progress(p);
  }
  result.search_s = stop.elapsed_s();
  result.best_found_s = pool.improved_s();
  result.peak_rss_bytes = peak_resident_bytes();
  // With no checkpoint to save, the search's memo and oracle are dead: freed here, inside the
  // timed run, not as optimize() returns.
  if (options.checkpoint_path.empty()) {
    memo.clear();
    oracle.reset();
  }

  // Step 4: rank by predicted time, verify in that order.
  rank_and_verify(run, pool.take_ranked());
  result.wall_s = result.search_s + result.verify_s;
  return result;
}

VerifiedRecord verify_result(const Graph& program, const Graph& candidate,
                             const SearchConfig& config) {
  const Graph expanded = expand_composites(program);
  if (candidate == expanded || candidate == program) return identical_to_input();
  EquivalenceChecker checker(expanded, verify_options(config));
  std::optional<VerifiedRecord> verdict = verify_candidate(checker, candidate);
  WEFT_CHECK(verdict, "a verification without a time budget was abandoned");
  return *verdict;
}

}  // namespace weft
