// Candidate rules from equal fingerprints, canonical renaming, the common-subgraph prunes and the
// finite-field check: TASO's generator stages, each counted.
#include "rewrite/generate.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <tuple>

#include "core/error.h"
#include "rewrite/check_rule.h"
#include "verify/field.h"

namespace weft {
namespace {

uint64_t multiset_hash(const std::vector<uint64_t>& hs) {
  uint64_t h = 0;
  for (uint64_t x : hs) h += ff::mix64(x);
  return h;
}

// A candidate as written: which graph is the source.
struct Oriented {
  const GenGraph* source;
  const GenGraph* target;
};

class Generator {
 public:
  Generator(const InputPool& pool, const GenerateOptions& options)
      : pool_(pool), options_(options) {
    for (size_t i = 0; i < pool.inputs.size(); ++i) identity_.push_back(static_cast<int>(i));
  }

  GenerateResult run(const Budget& budget) {
    const auto started = std::chrono::steady_clock::now();
    EnumerateOptions eo;
    eo.depth = options_.depth;
    eo.seed = options_.seed;
    eo.progress = options_.progress;
    EnumerateResult e = enumerate_graphs(pool_, eo, budget);
    GenerateResult out;
    out.stop = e.stop;
    out.counts.graphs = static_cast<int64_t>(e.graphs.size());

    std::map<std::vector<uint64_t>, std::vector<int>> groups;  // ordered: deterministic
    for (size_t i = 0; i < e.graphs.size(); ++i) {
      std::vector<uint64_t> key;
      for (int s : e.graphs[i].sinks) key.push_back(e.graphs[i].value_fingerprint[s]);
      std::sort(key.begin(), key.end());
      groups[key].push_back(static_cast<int>(i));
    }
    std::set<std::pair<uint64_t, uint64_t>> seen;
    std::vector<Oriented> kept;
    for (const auto& [key, members] : groups)
      for (size_t x = 0; x < members.size(); ++x)
        for (size_t y = x + 1; y < members.size(); ++y) {
          ++out.counts.candidates;
          const GenGraph& gx = e.graphs[members[x]];
          const GenGraph& gy = e.graphs[members[y]];
          auto [canon_key, oriented] = canonical(gx, gy);
          if (!seen.insert(canon_key).second || same_up_to_renaming(gx, gy)) continue;
          ++out.counts.after_renaming;
          if (common_at_inputs(gx, gy) || common_at_outputs(gx, gy)) continue;
          ++out.counts.after_common;
          kept.push_back(oriented);
        }
    for (const Oriented& o : kept) out.rules.push_back(write_rule(o));
    std::sort(out.rules.begin(), out.rules.end(), [](const Rule& a, const Rule& b) {
      return std::make_tuple(a.source.size() + a.target.size(), a.source, a.target) <
             std::make_tuple(b.source.size() + b.target.size(), b.source, b.target);
    });
    for (size_t i = 0; i < out.rules.size(); ++i) out.rules[i].id = static_cast<int>(i);
    const std::vector<RuleVerdict> verdicts =
        check_and_prove(out.rules, options_.check, options_.prove, options_.seed, options_.threads,
                        options_.progress);
    std::vector<Rule> checked;
    for (size_t i = 0; i < out.rules.size(); ++i) {
      Rule& r = out.rules[i];
      if (options_.check) {
        const RuleCheck& c = verdicts[i].check;
        if (c.verdict != Verdict::equivalent) {
          ++out.counts.rejected;
          if (options_.progress) options_.progress("rules: dropped, " + c.message);
          continue;
        }
        r.status = RuleStatus::finite_field;
        r.log2_bound = c.log2_bound;
      }
      if (verdicts[i].proof.verdict == ProofVerdict::proven) {
        r.status = RuleStatus::proven;  // keeps its finite-field bound
        ++out.counts.proven;
      } else if (r.status == RuleStatus::finite_field) {
        ++out.counts.finite_field;
      }
      r.id = static_cast<int>(checked.size());
      checked.push_back(std::move(r));
    }
    out.rules = std::move(checked);
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return out;
  }

 private:
  // The pair's key up to renaming its inputs and dim variables (TASO's renaming: inputs of the
  // same rank are interchangeable, dims follow) and orientation, the least over all of them; and
  // the orientation that attains it: the source has more operators (a rewrite that simplifies
  // reads forward). The rule keeps the pool's names of its first representative.
  std::pair<std::pair<uint64_t, uint64_t>, Oriented> canonical(const GenGraph& a,
                                                               const GenGraph& b) const {
    const size_t np = pool_.inputs.size();
    std::vector<int> used;
    for (size_t i = 0; i < np; ++i)
      if (reads_input(a, static_cast<int>(i)) || reads_input(b, static_cast<int>(i)))
        used.push_back(static_cast<int>(i));
    std::pair<uint64_t, uint64_t> best = {~uint64_t{0}, ~uint64_t{0}};
    Oriented chosen{&a, &b};
    for (int flip = 0; flip < 2; ++flip) {
      const GenGraph& s = flip ? b : a;
      const GenGraph& t = flip ? a : b;
      if (s.ops.size() < t.ops.size()) continue;
      std::vector<int> order = used;
      do {
        std::vector<int> ids(np);
        for (size_t i = 0; i < np; ++i) ids[i] = 1000 + static_cast<int>(i);
        std::vector<int> var_id(pool_.variables.size(), -1);
        int next_var = 0;
        uint64_t pattern = 0x9e37;
        for (size_t j = 0; j < order.size(); ++j) {
          ids[order[j]] = static_cast<int>(j);
          for (int d : pool_.inputs[order[j]].dims) {
            if (var_id[d] < 0) var_id[d] = next_var++;
            pattern = ff::mix64(pattern, static_cast<uint64_t>(var_id[d]) + 1);
          }
          pattern = ff::mix64(pattern, 0xd1);
        }
        std::vector<uint64_t> hs, ht;
        const std::vector<uint64_t> cs = gen_cones(s, np, ids, &hs);
        const std::vector<uint64_t> ct = gen_cones(t, np, ids, &ht);
        const std::pair<uint64_t, uint64_t> k = {
            ff::mix64(pattern, multiset_hash(hs), sinks_hash(s, cs)),
            ff::mix64(multiset_hash(ht), sinks_hash(t, ct))};
        if (k < best) {
          best = k;
          chosen = Oriented{&s, &t};
        }
      } while (std::next_permutation(order.begin(), order.end()));
    }
    return {best, chosen};
  }

  // Whether one graph is the other with inputs of the same shape swapped: such a "rule" only
  // restates the renaming.
  bool same_up_to_renaming(const GenGraph& a, const GenGraph& b) const {
    if (a.ops.size() != b.ops.size() || a.sinks.size() != b.sinks.size()) return false;
    const size_t np = pool_.inputs.size();
    std::vector<uint64_t> hb;
    const std::vector<uint64_t> cb = gen_cones(b, np, identity_, &hb);
    const std::pair<uint64_t, uint64_t> key_b = {multiset_hash(hb), sinks_hash(b, cb)};
    std::vector<int> perm = identity_;
    while (std::next_permutation(perm.begin(), perm.end())) {
      bool keeps = true;
      for (size_t i = 0; i < np && keeps; ++i)
        keeps = pool_.inputs[i].dims == pool_.inputs[perm[i]].dims;
      if (!keeps) continue;
      std::vector<uint64_t> ha;
      const std::vector<uint64_t> ca = gen_cones(a, np, perm, &ha);
      if (std::make_pair(multiset_hash(ha), sinks_hash(a, ca)) == key_b) return true;
    }
    return false;
  }

  static bool reads_input(const GenGraph& g, int input) {
    for (const GenOp& op : g.ops)
      if (std::find(op.operands.begin(), op.operands.end(), input) != op.operands.end())
        return true;
    return std::find(g.sinks.begin(), g.sinks.end(), input) != g.sinks.end();
  }
  // Outputs count as well: an identity graph has no ops to hash.
  static uint64_t sinks_hash(const GenGraph& g, const std::vector<uint64_t>& cones) {
    std::vector<uint64_t> out;
    for (int v : g.sinks) out.push_back(cones[v]);
    return multiset_hash(out);
  }

  // TASO's first prune: an operator both graphs compute from the same inputs. The rule is then
  // an instance of a smaller one with that operator's result as an input.
  bool common_at_inputs(const GenGraph& a, const GenGraph& b) const {
    std::vector<uint64_t> ha, hb;
    gen_cones(a, pool_.inputs.size(), identity_, &ha);
    gen_cones(b, pool_.inputs.size(), identity_, &hb);
    std::sort(ha.begin(), ha.end());
    std::sort(hb.begin(), hb.end());
    std::vector<uint64_t> both;
    std::set_intersection(ha.begin(), ha.end(), hb.begin(), hb.end(), std::back_inserter(both));
    return !both.empty();
  }

  // TASO's second prune: an output both graphs compute by the same operator from operands that
  // are equal (and read by nothing else). The rule follows from the one on the operands.
  bool common_at_outputs(const GenGraph& a, const GenGraph& b) const {
    const std::vector<int> pa = producers(a), pb = producers(b);
    const std::vector<int> ca = consumer_counts(a), cb = consumer_counts(b);
    for (int sa : a.sinks)
      for (int sb : b.sinks) {
        if (a.value_fingerprint[sa] != b.value_fingerprint[sb] || pa[sa] < 0 || pb[sb] < 0)
          continue;
        const GenOp& oa = a.ops[pa[sa]];
        const GenOp& ob = b.ops[pb[sb]];
        if (oa.kind != ob.kind || !(oa.attrs == ob.attrs) ||
            oa.operands.size() != ob.operands.size())
          continue;
        const auto ra = std::find(oa.results.begin(), oa.results.end(), sa) - oa.results.begin();
        const auto rb = std::find(ob.results.begin(), ob.results.end(), sb) - ob.results.begin();
        if (ra != rb || oa.results.size() > 1) continue;
        bool same = true;
        for (size_t i = 0; i < oa.operands.size() && same; ++i) {
          const int x = oa.operands[i], y = ob.operands[i];
          same = a.value_fingerprint[x] == b.value_fingerprint[y] &&
                 (x < static_cast<int>(pool_.inputs.size()) || ca[x] == 1) &&
                 (y < static_cast<int>(pool_.inputs.size()) || cb[y] == 1);
        }
        if (same) return true;
      }
    return false;
  }

  static std::vector<int> producers(const GenGraph& g) {
    std::vector<int> p(g.num_values(), -1);
    for (size_t i = 0; i < g.ops.size(); ++i)
      for (int r : g.ops[i].results) p[r] = static_cast<int>(i);
    return p;
  }
  static std::vector<int> consumer_counts(const GenGraph& g) {
    std::vector<int> c(g.num_values(), 0);
    for (const GenOp& op : g.ops)
      for (int o : op.operands) ++c[o];
    return c;
  }

  // The ops of `g` in a canonical order: among the ops whose operands are ready, the least hash.
  static std::vector<int> canonical_order(const GenGraph& g, const std::vector<uint64_t>& op_hashes,
                                          size_t pool_inputs) {
    std::vector<bool> ready(g.num_values(), false), done(g.ops.size(), false);
    for (size_t i = 0; i < pool_inputs; ++i) ready[i] = true;
    std::vector<int> order;
    while (order.size() < g.ops.size()) {
      int pick = -1;
      for (size_t i = 0; i < g.ops.size(); ++i) {
        if (done[i]) continue;
        const bool can = std::all_of(g.ops[i].operands.begin(), g.ops[i].operands.end(),
                                     [&](int o) { return ready[o]; });
        if (can && (pick < 0 || op_hashes[i] < op_hashes[pick])) pick = static_cast<int>(i);
      }
      WEFT_CHECK(pick >= 0, "a generated graph has a cycle");
      done[pick] = true;
      for (int r : g.ops[pick].results) ready[r] = true;
      order.push_back(pick);
    }
    return order;
  }

  // The rule in the pool's names: the inputs either graph reads, in pool order; source outputs
  // ordered by their cone, each matched with an unused target output of the same fingerprint.
  Rule write_rule(const Oriented& o) const {
    const size_t np = pool_.inputs.size();
    Rule rule;
    rule.provenance = fmt::format("generated:{}", options_.depth);
    for (size_t i = 0; i < np; ++i) {
      const int input = static_cast<int>(i);
      if (!reads_input(*o.source, input) && !reads_input(*o.target, input)) continue;
      RuleInput in{pool_.inputs[i].name, {}};
      for (int d : pool_.inputs[i].dims) in.dims.push_back(pool_.variables[d]);
      rule.inputs.push_back(in);
    }
    std::vector<uint64_t> hs, ht;
    const std::vector<uint64_t> cs = gen_cones(*o.source, np, identity_, &hs);
    const std::vector<uint64_t> ct = gen_cones(*o.target, np, identity_, &ht);
    std::vector<int> out_s = o.source->sinks;
    std::sort(out_s.begin(), out_s.end(), [&](int x, int y) { return cs[x] < cs[y]; });
    std::vector<int> rest_t = o.target->sinks;
    std::sort(rest_t.begin(), rest_t.end(), [&](int x, int y) { return ct[x] < ct[y]; });
    std::vector<int> out_t;
    for (int s : out_s) {
      auto it = std::find_if(rest_t.begin(), rest_t.end(), [&](int t) {
        return o.target->value_fingerprint[t] == o.source->value_fingerprint[s];
      });
      WEFT_CHECK(it != rest_t.end(), "a candidate's outputs do not match by fingerprint");
      out_t.push_back(*it);
      rest_t.erase(it);
    }
    rule.source = side(*o.source, hs, out_s);
    rule.target = side(*o.target, ht, out_t);
    return rule;
  }

  // One side's canonical statements: ops in canonical order, results named t0, t1, ...
  std::vector<std::string> side(const GenGraph& g, const std::vector<uint64_t>& op_hashes,
                                const std::vector<int>& outputs) const {
    const size_t np = pool_.inputs.size();
    const std::vector<int> order = canonical_order(g, op_hashes, np);
    std::vector<std::string> names(g.num_values());
    for (size_t i = 0; i < np; ++i) names[i] = pool_.inputs[i].name;
    int fresh = 0;
    for (int i : order)
      for (int r : g.ops[i].results) names[r] = fmt::format("t{}", fresh++);
    const std::vector<int64_t> sizes = {2, 3, 5, 7};  // any sizes: the text does not show them
    return side_lines(build_program(pool_, g, sizes, outputs, names, order));
  }

  const InputPool& pool_;
  const GenerateOptions& options_;
  std::vector<int> identity_;
};

}  // namespace

GenerateResult generate_rules(const InputPool& pool, const GenerateOptions& options,
                              const Budget& budget) {
  return Generator(pool, options).run(budget);
}

std::string counts_line(const GenerateCounts& c) {
  return fmt::format(
      "rules: {} candidates, {} after renaming, {} after common subgraphs, {} proven, {} by "
      "finite field",
      c.candidates, c.after_renaming, c.after_common, c.proven, c.finite_field);
}

}  // namespace weft
