// Finite-field check of a rule at fresh sizes, reusing the µGraph equivalence verifier.
#include "rewrite/check_rule.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <mutex>
#include <regex>
#include <thread>

#include "rewrite/axioms.h"

namespace weft {

const std::vector<std::vector<int64_t>>& rule_check_sizes() {
  static const std::vector<std::vector<int64_t>> sizes = {{5, 7, 11, 4}, {6, 4, 9, 5}};
  return sizes;
}

RuleCheck check_rule_finite_field(const Rule& rule, const std::vector<std::vector<int64_t>>& sizes,
                                  uint64_t seed) {
  RuleCheck out;
  out.verdict = Verdict::equivalent;
  out.log2_bound = -1000;
  for (const std::vector<int64_t>& s : sizes) {
    const std::map<std::string, int64_t> at = instantiation(rule, s);
    std::string where;
    for (const auto& [var, size] : at)
      where += fmt::format("{}{}={}", where.empty() ? "" : ", ", var, size);
    Graph source, target;
    try {
      source = instantiate(rule, false, at);
      target = instantiate(rule, true, at);
    } catch (const UserError& e) {
      return RuleCheck{
          Verdict::error, 0,
          fmt::format("rule {} does not type-check at {}: {}", rule.id, where, e.message())};
    }
    VerifyOptions options;
    options.seed = seed;
    options.threads = 1;
    options.float_check = false;
    const VerifyResult r = EquivalenceChecker(source, options).check(target);
    if (r.verdict != Verdict::equivalent) {
      out.verdict = r.verdict;
      out.message = r.verdict == Verdict::not_equivalent
                        ? fmt::format("rule {}: output {} differs at {}", rule.id, r.output, where)
                        : fmt::format("rule {} at {}: {}", rule.id, where, r.message);
      return out;
    }
    const int b = r.bound <= 0 ? -1000 : static_cast<int>(std::floor(std::log2(r.bound)));
    out.log2_bound = std::max(out.log2_bound, b);
  }
  return out;
}

bool rule_holds_with_base(const Rule& rule, const Rational& base, uint64_t seed) {
  Rule read = rule;
  auto rewrite_line = [&](std::string& line) {
    static const std::regex factor(R"(factor=([0-9./-]+))");
    std::string out;
    auto begin = line.cbegin();
    for (std::smatch m; std::regex_search(begin, line.cend(), m, factor); begin = m[0].second) {
      out.append(begin, m[0].first);
      const std::optional<Rational> value = Rational::parse(m[1].str());
      const std::optional<Rational> now = value ? rule_base_pow(*value, base) : std::nullopt;
      if (!now) return false;
      out += "factor=" + now->str();
    }
    out.append(begin, line.cend());
    line = out;
    return true;
  };
  for (std::string& l : read.source)
    if (!rewrite_line(l)) return false;
  for (std::string& l : read.target)
    if (!rewrite_line(l)) return false;
  return check_rule_finite_field(read, rule_check_sizes(), seed).verdict == Verdict::equivalent;
}

std::vector<RuleVerdict> check_and_prove(const std::vector<Rule>& rules, bool check, bool prove,
                                         uint64_t seed, int threads,
                                         const std::function<void(const std::string&)>& progress) {
  std::vector<RuleVerdict> out(rules.size());
  std::atomic<size_t> next{0};
  std::mutex progress_mu;
  size_t done = 0;             // under progress_mu
  std::exception_ptr failure;  // the first, under progress_mu; rethrown after the join
  auto work = [&] {
    for (size_t i = next++; i < rules.size(); i = next++) {
      try {
        if (check) out[i].check = check_rule_finite_field(rules[i], rule_check_sizes(), seed);
        if (prove && (!check || out[i].check.verdict == Verdict::equivalent))
          out[i].proof = prove_rule(rules[i], axioms());
      } catch (...) {
        std::lock_guard<std::mutex> lock(progress_mu);
        if (!failure) failure = std::current_exception();
        next = rules.size();
        return;
      }
      std::lock_guard<std::mutex> lock(progress_mu);
      if (++done % 500 == 0 && progress)
        progress(fmt::format("rules: checked {} of {}", done, rules.size()));
    }
  };
  const size_t n = std::min<size_t>(
      rules.size(), threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < n; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
  return out;
}

bool BaseVerdicts::holds(const Rule& rule, const Rational& base, uint64_t seed) {
  const auto key = std::make_tuple(rule.id, base.num(), base.den());
  auto it = known_.find(key);
  if (it == known_.end()) it = known_.emplace(key, rule_holds_with_base(rule, base, seed)).first;
  return it->second;
}

}  // namespace weft
