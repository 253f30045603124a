// The optimize pipeline, step by step: expand, build the oracle, search, check, rank, verify.
#include "driver/optimize.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <set>
#include <thread>

#include "core/parallel.h"
#include "core/system_memory.h"
#include "cost/cost_model.h"
#include "cost/roofline.h"
#include "ir/expand_composites.h"
#include "ir/printer.h"
#include "ir/validate.h"
#include "search/absexpr_oracle.h"
#include "search/kernel_search.h"
#include "search/memory_account.h"
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

VerifiedRecord verify_candidate(EquivalenceChecker& checker, const Graph& candidate) {
  VerifyResult v = checker.check(candidate);
  VerifiedRecord rec;
  rec.equivalent = v.verdict == Verdict::equivalent;
  rec.bound = v.bound;
  rec.tests = v.tests_run;
  rec.numerically_ok = rec.equivalent && (!v.floats || v.floats->acceptable);
  if (v.floats) rec.f32_error = v.floats->worst_f32_error();
  rec.detail =
      v.verdict == Verdict::equivalent
          ? ""
          : fmt::format("{}{}", verdict_name(v.verdict), v.message.empty() ? "" : ": " + v.message);
  return rec;
}

}  // namespace

OptimizeResult optimize(const Graph& input, const SearchConfig& config,
                        const OptimizeOptions& options) {
  OptimizeResult result;
  result.config = config;
  const Target& target = target_by_name(config.target);
  validate(input, target);
  result.program = expand_composites(input);
  const Graph& program = result.program;
  result.program_predicted_s = predict(program, target).total_s;
  result.roofline_s = roofline_floor(program, target);
  int threads = config.threads > 0 ? config.threads : hardware_threads();
  const std::string& checkpoint_path = options.checkpoint_path;

  // Step 1: the oracle (one saturated e-graph per output).
  AbsExprOracle oracle(program);
  result.oracle_complete = oracle.complete();

  // Step 2: resume from a checkpoint when one matches this program and configuration.
  std::string program_text = print_graph(program, false);
  CheckpointData checkpoint;
  // The memory budget only decides where a search stops (and the memo checkpoints no schedule it
  // cut short), so a run it stopped resumes under a larger one, or on a machine with more memory.
  nlohmann::json searched = config.to_json();
  searched.erase("memory_budget_mb");
  checkpoint.fingerprint =
      fmt::format("{:016x}", std::hash<std::string>{}(program_text + searched.dump()));
  BlockMemo memo;
  if (!checkpoint_path.empty())
    result.resumed =
        load_checkpoint(checkpoint_path, checkpoint.fingerprint, checkpoint, memo, oracle);

  // Step 3: search; every candidate is checked on the target and costed as it arrives.
  SearchStats stats;
  StopSignal stop(config.time_budget_s);
  result.memory_budget_bytes = std::min(config.memory_budget_mb, int64_t{1} << 40) << 20;
  MemoryAccount memory(result.memory_budget_bytes, stop);
  if (result.resumed) memory.add(memo.bytes());
  SearchConstants constants = constants_of(program);
  std::mutex mu;
  std::vector<RankedCandidate> found;
  std::set<std::string> seen;
  double best_s = 0;
  auto on_candidate = [&](Graph&& g) {
    RankedCandidate c;
    c.text = print_graph(g, false);
    if (!check_graph(g, target).empty()) {
      std::lock_guard<std::mutex> lock(mu);
      ++result.invalid;
      return;
    }
    c.predicted_s = predict(g, target).total_s;
    c.found_s = stop.elapsed_s();
    c.graph = std::move(g);
    std::lock_guard<std::mutex> lock(mu);
    if (!seen.insert(c.text).second) return;
    if (best_s == 0 || c.predicted_s < best_s) best_s = c.predicted_s;
    // The candidate (graph and text), its text again in `seen`, and the list's growth.
    int64_t bytes = heap_bytes(c.graph) + 2 * heap_bytes(c.text) +
                    map_node_bytes(sizeof(std::string)) - heap_bytes(found);
    found.push_back(std::move(c));
    memory.add(bytes + heap_bytes(found));
    memory.sample();  // the kernel search's thread: a deterministic point
  };
  auto search_progress = [&] {
    OptimizeProgress p;
    p.elapsed_s = stop.elapsed_s();
    p.states = stats.states.load();
    p.pruned = stats.pruned_expr.load() + stats.pruned_bound.load();
    p.block_graphs = stats.block_graphs.load();
    p.memory_held_bytes = memory.held();
    p.memory_budget_bytes = memory.budget();
    std::lock_guard<std::mutex> lock(mu);
    p.candidates = static_cast<int64_t>(found.size());
    p.best_predicted_s = best_s;
    return p;
  };
  // A callback's exception stops the search and is rethrown once the helper thread is gone.
  std::exception_ptr hook_error;
  {
    double last_checkpoint = 0, last_progress = 0;
    double period = 1.0;
    if (options.on_progress) period = std::min(period, options.progress_interval_s);
    if (!checkpoint_path.empty()) period = std::min(period, config.checkpoint_interval_s);
    if (options.should_stop) period = std::min(period, kStopPollPeriodS);
    Ticker ticker(std::max(period, 0.01), [&] {
      if (hook_error) return;
      try {
        if (options.should_stop && options.should_stop()) stop.stop(SearchStop::interrupted);
        double now = stop.elapsed_s();
        if (options.on_progress && now - last_progress >= options.progress_interval_s) {
          last_progress = now;
          options.on_progress(search_progress());
        }
        if (!checkpoint_path.empty() && now - last_checkpoint >= config.checkpoint_interval_s) {
          last_checkpoint = now;
          save_checkpoint(checkpoint_path, checkpoint, memo, oracle);
        }
      } catch (...) {
        hook_error = std::current_exception();
        stop.stop(SearchStop::interrupted);
      }
    });
    DimClasses classes = analyze_dim_classes(program);
    KernelSearchContext ctx{program, config, target, constants, classes, oracle,
                            stats,   stop,   memo,   threads,   &memory};
    search_kernel_graphs(ctx, on_candidate);
  }
  if (hook_error) std::rethrow_exception(hook_error);
  if (options.on_progress) {
    OptimizeProgress p = search_progress();
    p.search_done = true;
    options.on_progress(p);
  }
  result.search_s = stop.elapsed_s();
  result.stop = stop.reason();
  result.states = stats.states.load();
  result.pruned_expr = stats.pruned_expr.load();
  result.pruned_bound = stats.pruned_bound.load();
  result.block_graphs = stats.block_graphs.load();
  result.candidates = stats.candidates.load();
  result.split_candidates = stats.split_candidates.load();
  result.peak_accounted_bytes = result.stop == SearchStop::completed
                                    ? memory.sampled_peak()
                                    : std::max(memory.sampled_peak(), memory.peak());
  for (const auto& [key, results] : memo.snapshot()) {
    std::lock_guard<std::mutex> lock(results->mu);
    for (bool t : results->truncated) result.memo_truncated += t;
  }
  result.peak_rss_bytes = peak_resident_bytes();
  if (!checkpoint_path.empty()) save_checkpoint(checkpoint_path, checkpoint, memo, oracle);

  // Step 4: rank by predicted time (ties by text, so the order never depends on timing), then
  // verify in that order until the top-k are proven equivalent and numerically acceptable.
  std::sort(found.begin(), found.end(), [](const RankedCandidate& a, const RankedCandidate& b) {
    return a.predicted_s != b.predicted_s ? a.predicted_s < b.predicted_s : a.text < b.text;
  });
  auto verify_start = std::chrono::steady_clock::now();
  VerifyOptions vopt;
  vopt.target_error = config.target_error;
  vopt.seed = config.seed;
  vopt.threads = threads;
  EquivalenceChecker checker(program, vopt);
  OptimizeProgress verify_progress = search_progress();
  verify_progress.phase = OptimizeProgress::Phase::verify;
  verify_progress.search_done = true;
  for (RankedCandidate& c : found) {
    if (static_cast<int>(result.top.size()) >= config.top_k) {
      ++result.unverified;
      continue;
    }
    auto cached = checkpoint.verified.find(c.text);
    if (cached != checkpoint.verified.end()) {
      c.verification = cached->second;
    } else {
      c.verification = verify_candidate(checker, c.graph);
      checkpoint.verified[c.text] = c.verification;
      if (!checkpoint_path.empty()) save_checkpoint(checkpoint_path, checkpoint, memo, oracle);
    }
    result.tests += c.verification.tests;
    if (!c.verification.equivalent) {
      ++result.rejected;
    } else if (!c.verification.numerically_ok) {
      ++result.verified;
      ++result.numerically_rejected;
    } else {
      ++result.verified;
      result.top.push_back(c);
    }
    if (options.on_progress) {
      ++verify_progress.checked;
      verify_progress.kept = static_cast<int64_t>(result.top.size());
      verify_progress.elapsed_s = stop.elapsed_s();
      options.on_progress(verify_progress);
    }
  }
  result.verify_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - verify_start).count();
  result.wall_s = result.search_s + result.verify_s;
  return result;
}

}  // namespace weft
