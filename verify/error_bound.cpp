// Degree analysis and the per-test error bound; the rules mirror docs/verification.md line by line.
#include "verify/error_bound.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <type_traits>
#include <variant>

#include "core/error.h"
#include "ir/expand_composites.h"
#include "verify/field.h"

namespace weft {
namespace {

// Which elements of one exp / uninterpreted source tensor one element of a value may depend on.
// Boxed: per source dim, how many indices (`extent`) and on which of the value's dims (`deps`,
// bit kLoopBit: the for-loop iteration) they may depend; a dim with extent 1 and `tied` is one
// index given by the function named `tag` of those dims. The set is contained in the product of
// the per-dim sets, so its size is at most the product of the extents. Not boxed (after a reshape,
// or outside the kernel op that created the source): only `count` is known.
struct SourceDim {
  double size = 1;    // the source tensor's dim (or the for-loop range)
  double extent = 1;  // indices it may take for one element of the value
  uint64_t deps = 0;  // value dims (bit d) the indices depend on
  uint64_t tag = 0;   // with `tied`: the index function, for recognising equal ones
  bool tied = true;
};
constexpr uint64_t kLoopBit = uint64_t{1} << 63;
struct Footprint {
  bool boxed = false;
  double count = 0;
  std::vector<SourceDim> dims;
  double size() const {
    if (!boxed) return count;
    double n = 1;
    for (const SourceDim& d : dims) n *= d.extent;
    return n;
  }
};
using Sources = std::map<int, Footprint>;

Footprint opaque(double count) {
  return Footprint{false, count, {}};
}
// |A ∪ B| <= |A| + |B|; two boxes are contained in the box of their per-dim unions.
Footprint union_fp(const Footprint& a, const Footprint& b) {
  if (!a.boxed || !b.boxed || a.dims.size() != b.dims.size()) return opaque(a.size() + b.size());
  Footprint r = a;
  for (size_t j = 0; j < r.dims.size(); ++j) {
    SourceDim& x = r.dims[j];
    const SourceDim& y = b.dims[j];
    if (x.tied && y.tied && x.tag == y.tag && x.deps == y.deps) continue;
    x.extent = std::min(x.size, x.extent + y.extent);
    x.deps |= y.deps;
    x.tied = false;
  }
  return r;
}
Sources merge_src(const Sources& a, const Sources& b) {
  Sources r = a;
  for (const auto& [k, v] : b) {
    auto it = r.find(k);
    if (it == r.end())
      r.emplace(k, v);
    else
      it->second = union_fp(it->second, v);
  }
  return r;
}
// The g terms of a reduction over value dim `d` (bit `bit`): indices depending on it take up to
// g times as many values; `keep`: the result still has the dim (groups, `to` > 1).
Sources reduce_src(Sources a, uint64_t bit, double g, bool keep) {
  for (auto& [k, fp] : a) {
    if (!fp.boxed) {
      fp.count *= g;
      continue;
    }
    for (SourceDim& x : fp.dims)
      if (x.deps & bit) {
        x.extent = std::min(x.size, x.extent * g);
        x.tied = false;
        if (!keep) x.deps &= ~bit;
      }
  }
  return a;
}
// A movement op changes the index functions (a new tag) without changing which dims they use.
Sources retag_src(Sources a, uint64_t salt) {
  for (auto& [k, fp] : a)
    for (SourceDim& x : fp.dims) x.tag = ff::mix64(x.tag, salt);
  return a;
}
Sources to_opaque(Sources a) {
  for (auto& [k, fp] : a) fp = opaque(fp.size());
  return a;
}
// Dims of size 1 have one index: nothing depends on them (this is also what broadcasting does).
Sources drop_unit_dims(Sources a, const Shape& shape) {
  uint64_t unit = 0;
  for (size_t d = 0; d < shape.size() && d < 63; ++d)
    if (shape[d] == 1) unit |= uint64_t{1} << d;
  for (auto& [k, fp] : a)
    for (SourceDim& x : fp.dims) x.deps &= ~unit;
  return a;
}
// Renames value dims: bit d moves to bit to[d] (-1: dropped).
Sources remap_src(Sources a, const std::vector<int>& to) {
  for (auto& [k, fp] : a)
    for (SourceDim& x : fp.dims) {
      uint64_t deps = x.deps & kLoopBit;
      for (size_t d = 0; d < to.size(); ++d)
        if ((x.deps >> d) & 1 && to[d] >= 0) deps |= uint64_t{1} << to[d];
      x.deps = deps;
    }
  return a;
}

// One element's cone during the analysis: degrees, and for each exp / uninterpreted source tensor
// the part of it the element may depend on (docs/verification.md, "Counting sources").
struct Cone {
  double num = 0, den = 0;
  Sources exp_src, uf_src;
  double exp_arg_deg = 0, uf_arg_deg = 0;
};

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
// A sum of g terms with (possibly) different denominators, over value dim `d`.
Cone sum_cone(const Cone& x, double g, int d, bool keep) {
  const uint64_t bit = uint64_t{1} << d;
  return Cone{x.num + (g - 1) * x.den,
              g * x.den,
              reduce_src(x.exp_src, bit, g, keep),
              reduce_src(x.uf_src, bit, g, keep),
              x.exp_arg_deg,
              x.uf_arg_deg};
}
Cone join_cone(const Cone& a, const Cone& b) {
  return merge_cones(a, b, std::max(a.num, b.num), std::max(a.den, b.den));
}
Cone map_cone(Cone c, const std::function<Sources(Sources)>& f) {
  c.exp_src = f(std::move(c.exp_src));
  c.uf_src = f(std::move(c.uf_src));
  return c;
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
      if (g.level == Level::block) {
        op_runs = runs * static_cast<double>(g.num_blocks()) *
                  (op.stage == Stage::loop ? static_cast<double>(g.loop) : 1.0);
        block_ = &g;
        in_loop_ = op.stage == Stage::loop;
      }
      std::vector<Cone> out = op_stats(g, op, in, op_runs);
      WEFT_CHECK(out.size() == op.outputs.size(), "stats arity of '{}'", op_info(op.kind).name);
      for (size_t i = 0; i < out.size(); ++i)
        st[op.outputs[i]] = map_cone(std::move(out[i]), [&](Sources x) {
          return drop_unit_dims(std::move(x), g.type(op.outputs[i]).shape);
        });
    }
    std::vector<Cone> result;
    for (ValueId v : g.outputs) result.push_back(st[v]);
    return result;
  }

  DegreeStats finish(const Cone& c) const {
    DegreeStats s;
    s.num = c.num;
    s.den = c.den;
    for (const auto& [k, v] : c.exp_src) s.exps += std::min(v.size(), caps[k]);
    for (const auto& [k, v] : c.uf_src) s.ufs += std::min(v.size(), caps[k]);
    s.exp_arg_deg = c.exp_arg_deg;
    s.uf_arg_deg = c.uf_arg_deg;
    return s;
  }

 private:
  const Graph* block_ = nullptr;  // the block graph being analysed (its loop), if any
  bool in_loop_ = false;          // whether the current op runs once per for-loop iteration

  // A new source of `applications` elements, created elementwise over a value of `shape`: one
  // element of the value depends on one element of it (and, in a for-loop, of one iteration).
  std::pair<int, Footprint> new_source(double applications, const Shape& shape) {
    caps.push_back(applications);
    const int id = static_cast<int>(caps.size()) - 1;
    Footprint fp{true, 0, {}};
    for (size_t j = 0; j < shape.size(); ++j)
      fp.dims.push_back(SourceDim{static_cast<double>(shape[j]), 1,
                                  shape[j] > 1 ? uint64_t{1} << j : 0,
                                  ff::mix64(static_cast<uint64_t>(id), j), true});
    if (block_ && in_loop_)
      fp.dims.push_back(SourceDim{static_cast<double>(block_->loop), 1, kLoopBit,
                                  ff::mix64(static_cast<uint64_t>(id), 0x6c6f6f70ULL), true});
    return {id, fp};
  }
  Cone exp_cone(const Cone& x, double apps, const Shape& shape) {
    Cone r{1, 0, x.exp_src, x.uf_src, std::max(x.exp_arg_deg, x.num + x.den), x.uf_arg_deg};
    r.exp_src.insert(new_source(apps, shape));
    return r;
  }
  Cone uf_cone(const Cone& x, double apps, const Shape& shape) {
    Cone r{1, 0, x.exp_src, x.uf_src, x.exp_arg_deg, std::max(x.uf_arg_deg, x.num + x.den)};
    r.uf_src.insert(new_source(apps, shape));
    return r;
  }
  // max returns one member (degrees of a member); every member is ranked by a random function:
  // g ranks per result element.
  Cone max_cone(const Cone& x, double g, uint64_t bit, bool keep, double apps, const Shape& shape) {
    Cone r = x;
    r.exp_src = reduce_src(x.exp_src, bit, g, keep);
    r.uf_src = reduce_src(x.uf_src, bit, g, keep);
    r.uf_arg_deg = std::max(x.uf_arg_deg, x.num + x.den);
    auto [id, fp] = new_source(apps * g, shape);
    fp.dims.push_back(SourceDim{g, g, 0, 0, false});
    r.uf_src.emplace(id, fp);
    return r;
  }

  // A Lax formula's degrees: constants are Cone{} (degree 0, no sources).
  struct ConeAlgebra {
    using Value = Cone;
    Analyzer& an;
    const Cone& a;
    const Cone& b;
    double apps;
    const Shape& shape;
    Cone x() const { return a; }
    Cone y() const { return b; }
    Cone attribute(const char*) const { return Cone{}; }
    Cone literal(const Rational&) const { return Cone{}; }
    Cone add(const Cone& l, const Cone& r) const { return add_cone(l, r); }
    Cone sub(const Cone& l, const Cone& r) const { return add_cone(l, r); }
    Cone mul(const Cone& l, const Cone& r) const { return mul_cone(l, r); }
    Cone div(const Cone& l, const Cone& r) const { return div_cone(l, r); }
    Cone exp(const Cone& l) const { return an.exp_cone(l, apps, shape); }
  };

  std::vector<Cone> op_stats(const Graph& g, const Op& op, const std::vector<Cone>& in,
                             double runs) {
    const OpInfo& info = op_info(op.kind);
    const size_t n_out = op.outputs.size();
    const Shape& out_shape = g.type(op.outputs[0]).shape;
    const double apps = runs * static_cast<double>(numel(out_shape));
    auto op_salt = [&](uint64_t extra) {
      uint64_t h = ff::mix64(static_cast<uint64_t>(op.kind), extra);
      for (const auto& [name, value] : op.attrs.entries()) {
        h = ff::mix64(h, std::hash<std::string>{}(name));
        std::visit(
            [&](const auto& v) {
              using T = std::decay_t<decltype(v)>;
              if constexpr (std::is_same_v<T, int64_t>)
                h = ff::mix64(h, static_cast<uint64_t>(v));
              else if constexpr (std::is_same_v<T, Rational>)
                h = ff::mix64(h, static_cast<uint64_t>(v.num()), static_cast<uint64_t>(v.den()));
              else
                for (int64_t e : v) h = ff::mix64(h, static_cast<uint64_t>(e));
            },
            value);
      }
      for (int64_t e : g.type(op.inputs[0]).shape) h = ff::mix64(h, static_cast<uint64_t>(e));
      return g.level == Level::block
                 ? ff::mix64(h, ff::mix64(static_cast<uint64_t>(g.grid[0] * 65536 + g.grid[1]),
                                          static_cast<uint64_t>(g.grid[2]),
                                          static_cast<uint64_t>(g.loop)))
                 : h;
    };
    auto retag = [&](const Cone& c, uint64_t extra) {
      return map_cone(c, [&](Sources x) { return retag_src(std::move(x), op_salt(extra)); });
    };
    auto reduction = [&](const Cone& c, bool is_max) {
      const Shape& s = g.type(op.inputs[0]).shape;
      const int64_t dim = op.attrs.get_int("dim");
      const int64_t to = op.attrs.get_int_or("to", 1);
      const auto grp = static_cast<double>(s[dim] / to);
      if (is_max) return max_cone(c, grp, uint64_t{1} << dim, to > 1, apps, out_shape);
      return sum_cone(c, grp, static_cast<int>(dim), to > 1);
    };
    switch (op.kind) {
      WEFT_CASES_UNARY
      WEFT_CASES_BINARY {
        if (info.formula.empty()) return {uf_cone(in[0], apps, out_shape)};
        ConeAlgebra algebra{*this, in[0], in.size() > 1 ? in[1] : in[0], apps, out_shape};
        return {evaluate_formula(info.formula, algebra)};
      }
      case OpKind::matmul: {
        // An elementwise product over [..., m, n, k] (k as dim r), then a sum over k.
        const Shape& a = g.type(op.inputs[0]).shape;
        const int r = static_cast<int>(a.size());
        std::vector<int> amap(r), bmap(r);
        for (int d = 0; d < r; ++d) amap[d] = bmap[d] = d;
        amap[r - 1] = r;
        bmap[r - 2] = r;
        Cone x = map_cone(in[0], [&](Sources s) { return remap_src(std::move(s), amap); });
        Cone y = map_cone(in[1], [&](Sources s) { return remap_src(std::move(s), bmap); });
        return {sum_cone(mul_cone(x, y), static_cast<double>(a.back()), r, false)};
      }
      case OpKind::sum:
      case OpKind::mean:
        return {reduction(in[0], false)};
      case OpKind::max:
        return {reduction(in[0], true)};
      case OpKind::reshape:
        return {map_cone(in[0], to_opaque)};
      case OpKind::repeat:
        return {retag(in[0], 0)};
      case OpKind::iter: {
        // Tile dim d holds tensor dim d shifted by the block (fixed for one output element) and,
        // for the fmap dim, by the iteration.
        Cone r = retag(in[0], 0);
        const int64_t f = op.attrs.get_int("fmap");
        if (f >= 0)
          r = map_cone(r, [&](Sources s) {
            for (auto& [k, fp] : s)
              for (SourceDim& x : fp.dims)
                if (x.deps & (uint64_t{1} << f)) x.deps |= kLoopBit;
            return s;
          });
        return {r};
      }
      case OpKind::accum_concat: {
        // The iterations are laid out along `dim`: what depended on the iteration now depends
        // on that dim.
        const int64_t d = op.attrs.get_int("dim");
        return {map_cone(retag(in[0], 0), [&](Sources s) {
          for (auto& [k, fp] : s)
            for (SourceDim& x : fp.dims)
              if (x.deps & kLoopBit) x.deps = (x.deps & ~kLoopBit) | (uint64_t{1} << d);
          return s;
        })};
      }
      case OpKind::save: {
        // Which block wrote an output element depends on the omap dims of its index.
        uint64_t block_dims = 0;
        for (int64_t d : op.attrs.get_list("omap"))
          if (d >= 0) block_dims |= uint64_t{1} << d;
        // (The validator puts an accumulator between a loop-stage iter and a save; should an
        // iteration dependence remain, it is counted as a sum over the loop.)
        const auto loop = static_cast<double>(g.loop);
        return {map_cone(retag(in[0], 0), [&](Sources s) {
          s = reduce_src(std::move(s), kLoopBit, loop, false);
          for (auto& [k, fp] : s)
            for (SourceDim& x : fp.dims) x.deps |= block_dims;
          return s;
        })};
      }
      case OpKind::split: {
        std::vector<Cone> parts;
        for (size_t p = 0; p < n_out; ++p) parts.push_back(retag(in[0], p + 1));
        return parts;
      }
      case OpKind::concat: {
        Cone r = retag(in[0], 1);
        for (size_t i = 1; i < in.size(); ++i) r = join_cone(r, retag(in[i], i + 1));
        return {r};
      }
      case OpKind::rms_norm: {
        // x / sqrt(mean(x^2, dim) + eps): one sqrt per reduced row.
        const Shape& s = g.type(op.inputs[0]).shape;
        auto dim = static_cast<size_t>(op.attrs.get_int("dim"));
        const auto len = static_cast<double>(s[dim]);
        Cone ms = sum_cone(mul_cone(in[0], in[0]), len, static_cast<int>(dim), false);
        if (op.attrs.get_rational("eps") != Rational(0)) ms = add_cone(ms, Cone{});
        Shape row = s;
        row[dim] = 1;
        return {div_cone(in[0], uf_cone(ms, apps / len, row))};
      }
      case OpKind::softmax: {
        const Shape& s = g.type(op.inputs[0]).shape;
        auto dim = static_cast<size_t>(op.attrs.get_int("dim"));
        Cone e = exp_cone(in[0], apps, s);
        return {
            div_cone(e, sum_cone(e, static_cast<double>(s[dim]), static_cast<int>(dim), false))};
      }
      case OpKind::accum_sum:
        return {sum_cone(in[0], static_cast<double>(g.loop), 63, false)};
      case OpKind::accum_max: {
        in_loop_ = false;  // one rank source element per result element and iteration
        return {max_cone(in[0], static_cast<double>(g.loop), kLoopBit, false,
                         runs / static_cast<double>(g.loop) * static_cast<double>(numel(out_shape)),
                         out_shape)};
      }
      case OpKind::kernel: {
        // Sources created inside the kernel are indexed by block, iteration and tile element:
        // outside it only their counts are kept.
        const auto first = static_cast<int>(caps.size());
        std::vector<Cone> out = run(*op.body, in, runs);
        block_ = nullptr;
        in_loop_ = false;
        for (Cone& c : out)
          c = map_cone(std::move(c), [&](Sources s) {
            for (auto& [k, fp] : s)
              if (k >= first) fp = opaque(fp.size());
            return s;
          });
        return out;
      }
      case OpKind::thread:
        return run(*op.body, in, runs);
        // Model-only operators: never in a µGraph.
        WEFT_CASES_MODEL
        break;
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
