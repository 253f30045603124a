// `weft rules generate | verify | list`: graph rewrite rules generated from the operator table,
// checked, and shown (docs/rewrites.md). Exit 0; 3 when `verify` finds a rule that fails.
#include <fmt/format.h>

#include <fstream>
#include <iostream>

#include "core/source_file.h"
#include "rewrite/check_rule.h"
#include "rewrite/generate.h"
#include "tools/weft/command.h"

namespace weft::cli {
namespace {

std::string one_line(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += (out.empty() ? "" : "; ") + l;
  return out;
}

void write_or_print(const std::string& path, const std::string& text) {
  if (path.empty()) {
    std::cout << text;
    return;
  }
  std::ofstream f(path);
  if (!(f << text)) throw UserError(SourceLoc{path}, "cannot write the rule file");
}

std::string status_str(const Rule& r) {
  if (r.status == RuleStatus::finite_field) return fmt::format("finite_field 2^{}", r.log2_bound);
  return rule_status_name(r.status);
}

Register reg(
    "rules", "Graph rewrite rules: generate them from the operator table, verify, list",
    [](CLI::App& sub) {
      sub.require_subcommand(1);
      auto depth = std::make_shared<int>(3);
      auto deep = std::make_shared<bool>(false);
      auto seed = std::make_shared<uint64_t>(1);
      auto time_budget = std::make_shared<double>(0);
      auto memory_gib = std::make_shared<double>(8);
      auto no_check = std::make_shared<bool>(false);
      auto no_prove = std::make_shared<bool>(false);
      auto out = std::make_shared<std::string>();
      auto file = std::make_shared<std::string>();
      auto quiet = std::make_shared<bool>(false);
      CLI::App* generate = sub.add_subcommand(
          "generate", "Enumerate graphs, pair equal fingerprints, prune and check the rules");
      generate->add_option("--depth", *depth, "operators per graph (1-3; 4 with --deep)");
      generate->add_flag("--deep", *deep, "allow --depth 4 (minutes, many more rules)");
      generate->add_option("--seed", *seed, "seed of the fingerprints and checks");
      generate->add_option("--time-budget", *time_budget,
                           "seconds for the enumeration (0: no limit); the stop reason is printed");
      generate->add_option("--memory-budget", *memory_gib,
                           "GiB the enumerated graphs may hold (default 8; 0: no limit)");
      generate->add_flag("--no-check", *no_check,
                         "skip the finite-field check at fresh sizes (rules stay unverified)");
      generate->add_flag("--no-prove", *no_prove, "skip the Z3 proofs from the axioms");
      generate->add_option("-o,--output", *out, "the rule file to write (default: stdout)");
      generate->add_flag("-q,--quiet", *quiet, "no progress lines on stderr");
      auto threads = std::make_shared<int>(0);
      const char* threads_help = "threads for the checks and proofs (0: the cores)";
      generate->add_option("--threads", *threads, threads_help)->check(CLI::NonNegativeNumber);
      CLI::App* verify = sub.add_subcommand(
          "verify", "Prove every rule of a file from the axioms (Z3) and test it at fresh sizes");
      verify->add_option("FILE", *file, "rule file")->required();
      verify->add_option("--seed", *seed, "seed of the checks");
      verify->add_option("-o,--output", *out,
                         "write the file again with each rule's status from this check");
      verify->add_option("--threads", *threads, threads_help)->check(CLI::NonNegativeNumber);
      CLI::App* list = sub.add_subcommand("list", "One line per rule: status, source, target");
      list->add_option("FILE", *file, "rule file")->required();
      return [=]() -> int {
        if (generate->parsed()) {
          if (*depth < 1 || *depth > 4 || (*depth == 4 && !*deep))
            throw UserError(fmt::format(
                "rules generate --depth {}: the depth is 1 to 3 (4 with --deep)", *depth));
          GenerateOptions options;
          options.depth = *depth;
          options.seed = *seed;
          options.check = !*no_check;
          options.prove = !*no_prove;
          options.threads = *threads;
          if (!*quiet) options.progress = [](const std::string& l) { std::cerr << l << "\n"; };
          const GenerateResult r = generate_rules(
              default_input_pool(), options,
              Budget({.time_s = *time_budget,
                      .memory_bytes = static_cast<int64_t>(*memory_gib * (1 << 30))}));
          const std::string header = fmt::format(
              "weft rules generate --depth {} --seed {}: {} graphs in {:.1f} s, stop: {}\n{}",
              *depth, *seed, r.counts.graphs, r.seconds, stop_reason_name(r.stop),
              counts_line(r.counts));
          write_or_print(*out, print_rules(r.rules, header));
          if (r.counts.rejected > 0)
            std::cerr << fmt::format("rules: {} candidates failed the check at fresh sizes\n",
                                     r.counts.rejected);
          std::cout << fmt::format("{} graphs, {:.1f} s, stop: {}\n", r.counts.graphs, r.seconds,
                                   stop_reason_name(r.stop))
                    << counts_line(r.counts) << "\n";
          return 0;
        }
        std::vector<Rule> rules = parse_rules(read_source_file(*file), *file);
        if (list->parsed()) {
          for (const Rule& r : rules)
            std::cout << fmt::format("{:>4}  {:<20} {}  =>  {}\n", r.id, status_str(r),
                                     one_line(r.source), one_line(r.target));
          return 0;
        }
        int failed = 0;
        const std::vector<RuleVerdict> verdicts =
            check_and_prove(rules, /*check=*/true, /*prove=*/true, *seed, *threads,
                            [](const std::string& l) { std::cerr << l << "\n"; });
        for (size_t i = 0; i < rules.size(); ++i) {
          Rule& r = rules[i];
          const RuleCheck& c = verdicts[i].check;
          const ProofResult& p = verdicts[i].proof;
          if (c.verdict == Verdict::equivalent) {
            r.status =
                p.verdict == ProofVerdict::proven ? RuleStatus::proven : RuleStatus::finite_field;
            r.log2_bound = c.log2_bound;
            std::cout << fmt::format("rule {}: holds ({}, finite field 2^{})\n", r.id,
                                     p.verdict == ProofVerdict::proven
                                         ? "proven by Z3"
                                         : std::string(proof_verdict_name(p.verdict)),
                                     c.log2_bound);
          } else {
            ++failed;
            r.status = RuleStatus::unverified;
            std::cout << fmt::format(
                "rule {}: FAILS: {}{}\n", r.id, c.message,
                p.verdict == ProofVerdict::proven ? " (yet Z3 proved it: an axiom is wrong)" : "");
          }
        }
        std::cout << fmt::format("{} of {} rules hold\n", rules.size() - failed, rules.size());
        if (!out->empty()) write_or_print(*out, print_rules(rules, "checked by weft rules verify"));
        return failed ? 3 : 0;
      };
    });

}  // namespace
}  // namespace weft::cli
