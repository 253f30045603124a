// Degree analysis and the per-test error bound; the rules mirror docs/verification.md line by line.
#include "verify/error_bound.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.h"
#include "ir/expand_composites.h"
#include "verify/field.h"

namespace weft {
namespace {

// One element's cone during the analysis: degrees, and for each exp / uninterpreted source tensor
// how many of its elements the cone may contain (capped at the source's size when totalled, so a
// tensor shared by many terms of a sum is not counted more often than it has elements).
struct Cone {
  double num = 0, den = 0;
  std::map<int, double> exp_src, uf_src;
  double exp_arg_deg = 0, uf_arg_deg = 0;
};

std::map<int, double> merge_src(const std::map<int, double>& a, const std::map<int, double>& b) {
  std::map<int, double> r = a;
  for (const auto& [k, v] : b) r[k] += v;
  return r;
}
std::map<int, double> scale_src(std::map<int, double> a, double g) {
  for (auto& kv : a) kv.second *= g;
  return a;
}

Cone merge_cones(const Cone& a, const Cone& b, double num, double den) {
  return Cone{num,
              den,
              merge_src(a.exp_src, b.exp_src),
              merge_src(a.uf_src, b.uf_src),
              std::max(a.exp_arg_deg, b.exp_arg_deg),
              std::max(a.uf_arg_deg, b.uf_arg_deg)};
}
Cone add_cone(const Cone& a, const Cone& b) {
  return merge_cones(a, b, std::max(a.num + b.den, b.num + a.den), a.den + b.den);
}
Cone mul_cone(const Cone& a, const Cone& b) {
  return merge_cones(a, b, a.num + b.num, a.den + b.den);
}
Cone div_cone(const Cone& a, const Cone& b) {
  return merge_cones(a, b, a.num + b.den, a.den + b.num);
}
// A sum of g terms with (possibly) different denominators.
Cone sum_cone(const Cone& x, double g) {
  return Cone{x.num + (g - 1) * x.den, g * x.den,     scale_src(x.exp_src, g),
              scale_src(x.uf_src, g),  x.exp_arg_deg, x.uf_arg_deg};
}
Cone join_cone(const Cone& a, const Cone& b) {
  Cone r = merge_cones(a, b, std::max(a.num, b.num), std::max(a.den, b.den));
  for (auto& [k, v] : r.exp_src)
    v = std::max(a.exp_src.count(k) ? a.exp_src.at(k) : 0.0,
                 b.exp_src.count(k) ? b.exp_src.at(k) : 0.0);
  for (auto& [k, v] : r.uf_src)
    v = std::max(a.uf_src.count(k) ? a.uf_src.at(k) : 0.0,
                 b.uf_src.count(k) ? b.uf_src.at(k) : 0.0);
  return r;
}

class Analyzer {
 public:
  // Sizes of the exp / uninterpreted sources (applications per program run).
  std::vector<double> caps;

  // Stats of every value of `g` given its inputs' cones; `runs` is how often the graph runs per
  // program run (blocks x iterations for block graphs). Returns the outputs' cones.
  std::vector<Cone> run(const Graph& g, const std::vector<Cone>& inputs, double runs) {
    WEFT_CHECK(inputs.size() == g.inputs.size(), "stats for {} of {} inputs", inputs.size(),
               g.inputs.size());
    std::vector<Cone> st(g.values.size());
    for (size_t i = 0; i < inputs.size(); ++i) st[g.inputs[i]] = inputs[i];
    for (const Op& op : g.ops) {
      std::vector<Cone> in;
      for (ValueId v : op.inputs) in.push_back(st[v]);
      double op_runs = runs;
      if (g.level == Level::block)
        op_runs = runs * static_cast<double>(g.num_blocks()) *
                  (op.stage == Stage::loop ? static_cast<double>(g.loop) : 1.0);
      std::vector<Cone> out = op_stats(g, op, in, op_runs);
      WEFT_CHECK(out.size() == op.outputs.size(), "stats arity of '{}'", op_info(op.kind).name);
      for (size_t i = 0; i < out.size(); ++i) st[op.outputs[i]] = out[i];
    }
    std::vector<Cone> result;
    for (ValueId v : g.outputs) result.push_back(st[v]);
    return result;
  }

  DegreeStats finish(const Cone& c) const {
    DegreeStats s;
    s.num = c.num;
    s.den = c.den;
    for (const auto& [k, v] : c.exp_src) s.exps += std::min(v, caps[k]);
    for (const auto& [k, v] : c.uf_src) s.ufs += std::min(v, caps[k]);
    s.exp_arg_deg = c.exp_arg_deg;
    s.uf_arg_deg = c.uf_arg_deg;
    return s;
  }

 private:
  int new_source(double applications) {
    caps.push_back(applications);
    return static_cast<int>(caps.size()) - 1;
  }
  Cone exp_cone(const Cone& x, double apps) {
    Cone r{1, 0, x.exp_src, x.uf_src, std::max(x.exp_arg_deg, x.num + x.den), x.uf_arg_deg};
    r.exp_src[new_source(apps)] += 1;
    return r;
  }
  Cone uf_cone(const Cone& x, double apps) {
    Cone r{1, 0, x.exp_src, x.uf_src, x.exp_arg_deg, std::max(x.uf_arg_deg, x.num + x.den)};
    r.uf_src[new_source(apps)] += 1;
    return r;
  }
  // max returns one member (degrees of a member); every member is ranked by a random function.
  Cone max_cone(const Cone& x, double g, double apps) {
    Cone r = sum_cone(x, g);
    r.num = x.num;
    r.den = x.den;
    r.uf_arg_deg = std::max(x.uf_arg_deg, x.num + x.den);
    r.uf_src[new_source(apps * g)] += g;
    return r;
  }

  // A Lax formula's degrees: constants are Cone{} (degree 0, no sources).
  struct ConeAlgebra {
    using Value = Cone;
    Analyzer& an;
    const Cone& a;
    const Cone& b;
    double apps;
    Cone x() const { return a; }
    Cone y() const { return b; }
    Cone attribute(const char*) const { return Cone{}; }
    Cone literal(const Rational&) const { return Cone{}; }
    Cone add(const Cone& l, const Cone& r) const { return add_cone(l, r); }
    Cone sub(const Cone& l, const Cone& r) const { return add_cone(l, r); }
    Cone mul(const Cone& l, const Cone& r) const { return mul_cone(l, r); }
    Cone div(const Cone& l, const Cone& r) const { return div_cone(l, r); }
    Cone exp(const Cone& l) const { return an.exp_cone(l, apps); }
  };

  std::vector<Cone> op_stats(const Graph& g, const Op& op, const std::vector<Cone>& in,
                             double runs) {
    const OpInfo& info = op_info(op.kind);
    const size_t n_out = op.outputs.size();
    const double apps = runs * static_cast<double>(numel(g.type(op.outputs[0]).shape));
    const auto k = static_cast<double>(combined_elements(g, op));
    switch (info.symbolic) {
      case Symbolic::elementwise: {
        if (info.formula.empty()) return {uf_cone(in[0], apps)};
        ConeAlgebra algebra{*this, in[0], in.size() > 1 ? in[1] : in[0], apps};
        return {evaluate_formula(info.formula, algebra)};
      }
      case Symbolic::contraction:
        return {sum_cone(mul_cone(in[0], in[1]), k)};
      case Symbolic::sum:
      case Symbolic::mean:
        return {sum_cone(in[0], k)};
      case Symbolic::max:
        // Rankings of the group's members: per result element of a reduction; for a for-loop
        // accumulator (which runs every iteration) once per element of the finished tile.
        if (info.op_class == OpClass::structure)
          return {max_cone(in[0], k,
                           runs / k * static_cast<double>(numel(g.type(op.outputs[0]).shape)))};
        return {max_cone(in[0], k, apps)};
      case Symbolic::select:
        return std::vector<Cone>(n_out, in[0]);
      case Symbolic::join: {
        Cone r = in[0];
        for (const Cone& s : in) r = join_cone(r, s);
        return {r};
      }
      case Symbolic::expansion: {
        Graph expanded = composite_expansion(g, op);
        return run(expanded, in, runs);
      }
      case Symbolic::body:
        return run(*op.body, in, runs);
    }
    WEFT_CHECK(false, "no degree rule for '{}'", info.name);
    return {};
  }
};

double pairs(double n) {
  return n * (n - 1) / 2;
}

}  // namespace

std::vector<DegreeStats> degree_stats(const Graph& g) {
  Analyzer an;
  std::vector<Cone> inputs(g.inputs.size(), Cone{1, 0, {}, {}, 0, 0});
  std::vector<DegreeStats> out;
  for (const Cone& c : an.run(g, inputs, 1.0)) out.push_back(an.finish(c));
  return out;
}

TestBound output_bound(const DegreeStats& a, const DegreeStats& b) {
  const double p = static_cast<double>(ff::kP), q = static_cast<double>(ff::kQ);
  TestBound t;
  const double exps = a.exps + b.exps, ufs = a.ufs + b.ufs;
  t.exp_collision = pairs(exps) * 2 * std::max(a.exp_arg_deg, b.exp_arg_deg) / q;
  t.uf_collision = pairs(ufs) * 2 * std::max(a.uf_arg_deg, b.uf_arg_deg) / p;
  t.polynomial = std::max(a.num + b.den, b.num + a.den) * (exps + 1) / p;
  t.total = std::min(1.0, t.exp_collision + t.uf_collision + t.polynomial);
  return t;
}

double per_test_bound(const std::vector<DegreeStats>& a, const std::vector<DegreeStats>& b) {
  WEFT_CHECK(a.size() == b.size(), "bound of {} vs {} outputs", a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, output_bound(a[i], b[i]).total);
  return worst;
}

int tests_needed(double per_test, double target) {
  if (!(target > 0 && target < 1))
    throw UserError(
        fmt::format("the target error must lie strictly between 0 and 1, got {}", target));
  if (per_test >= 1)
    throw UserError(
        "the programs are too large for the finite-field test: one test's error "
        "bound is not below 1 (see docs/verification.md)");
  if (per_test <= 0) return 1;
  int t = static_cast<int>(std::ceil(std::log(target) / std::log(per_test) - 1e-9));
  return std::max(1, t);
}

}  // namespace weft
