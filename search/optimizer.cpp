// The optimize pipeline, step by step: expand, build the oracle, search, check, rank, verify.
#include "search/optimizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <iostream>
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

// Runs `tick` every `period_s` until stopped.
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

std::string gigabytes(int64_t bytes) {
  return fmt::format("{:.2f}", static_cast<double>(bytes) / (int64_t{1} << 30));
}

std::string si(double v) {
  if (v >= 1e9) return fmt::format("{:.2f}G", v / 1e9);
  if (v >= 1e6) return fmt::format("{:.2f}M", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.1f}k", v / 1e3);
  return fmt::format("{:.0f}", v);
}

}  // namespace

OptimizeResult optimize(const Graph& input, const SearchConfig& config,
                        const OptimizeOptions& options) {
  OptimizeResult result;
  const Target& target = target_by_name(config.target);
  validate(input, target);
  result.program = expand_composites(input);
  const Graph& program = result.program;
  result.program_predicted_s = predict(program, target).total_s;
  result.roofline_s = roofline_floor(program, target);
  int threads = config.threads > 0 ? config.threads : hardware_threads();

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
  if (!config.checkpoint_path.empty())
    result.resumed =
        load_checkpoint(config.checkpoint_path, checkpoint.fingerprint, checkpoint, memo, oracle);

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
  auto progress_line = [&] {
    double t = stop.elapsed_s();
    std::lock_guard<std::mutex> lock(mu);
    std::cerr
        << fmt::format(
               "{}[{:6.1f}s] states {} ({}/s) pruned {} block graphs {} candidates {} best {} "
               "mem {}/{} GB{}",
               options.progress_tty ? "\r" : "", t, si(stats.states.load()),
               si(stats.states.load() / std::max(t, 1e-9)),
               si(stats.pruned_expr.load() + stats.pruned_bound.load()),
               si(stats.block_graphs.load()), found.size(),
               best_s > 0 ? fmt::format("{:.1f} us", best_s * 1e6) : std::string("-"),
               gigabytes(memory.held()),
               memory.budget() > 0 ? gigabytes(memory.budget()) : std::string("-"),
               options.progress_tty ? "" : "\n")
        << std::flush;
  };
  {
    double last_checkpoint = 0;
    double period =
        config.checkpoint_path.empty() ? 1.0 : std::min(1.0, config.checkpoint_interval_s);
    Ticker ticker(std::max(period, 0.01), [&] {
      if (options.progress) progress_line();
      if (!config.checkpoint_path.empty() &&
          stop.elapsed_s() - last_checkpoint >= config.checkpoint_interval_s) {
        last_checkpoint = stop.elapsed_s();
        save_checkpoint(config.checkpoint_path, checkpoint, memo, oracle);
      }
    });
    DimClasses classes = analyze_dim_classes(program);
    KernelSearchContext ctx{program, config, target, constants, classes, oracle,
                            stats,   stop,   memo,   threads,   &memory};
    search_kernel_graphs(ctx, on_candidate);
  }
  if (options.progress) {
    progress_line();
    if (options.progress_tty) std::cerr << "\n";
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
  if (!config.checkpoint_path.empty())
    save_checkpoint(config.checkpoint_path, checkpoint, memo, oracle);

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
  for (RankedCandidate& c : found) {
    if (static_cast<int>(result.top.size()) >= config.top_k) {
      ++result.unverified;
      continue;
    }
    auto cached = checkpoint.verified.find(c.text);
    if (cached != checkpoint.verified.end()) {
      c.verification = cached->second;
    } else {
      VerifyResult v = checker.check(c.graph);
      VerifiedRecord& rec = c.verification;
      rec.equivalent = v.verdict == Verdict::equivalent;
      rec.bound = v.bound;
      rec.tests = v.tests_run;
      rec.numerically_ok = rec.equivalent && (!v.floats || v.floats->acceptable);
      if (v.floats)
        for (const OutputFloatError& e : v.floats->outputs)
          rec.f32_error = std::max(rec.f32_error, e.f32.scaled_error);
      rec.detail = v.verdict == Verdict::equivalent
                       ? ""
                       : fmt::format("{}{}", verdict_name(v.verdict),
                                     v.message.empty() ? "" : ": " + v.message);
      checkpoint.verified[c.text] = rec;
      if (!config.checkpoint_path.empty())
        save_checkpoint(config.checkpoint_path, checkpoint, memo, oracle);
    }
    result.tests += c.verification.tests;
    if (!c.verification.equivalent) {
      ++result.rejected;
      continue;
    }
    ++result.verified;
    if (!c.verification.numerically_ok) {
      ++result.numerically_rejected;
      continue;
    }
    result.top.push_back(c);
  }
  result.verify_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - verify_start).count();
  result.wall_s = result.search_s + result.verify_s;
  return result;
}

}  // namespace weft
