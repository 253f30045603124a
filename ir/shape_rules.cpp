// The operator table's shape rules, each one template over the dimension algebra. Where the two
// layers word an error differently (tests hold both), a check carries both wordings: the
// symbolic requirement ("expected ..., but ... fails at ...") and the concrete sentence.
#include "ir/shape_rules.h"

#include <fmt/format.h>

#include <set>

#include "ir/cast.h"
#include "ir/dim_algebra.h"

namespace weft::shape_rules {

namespace {

template <class A>
using In = std::vector<typename A::Tensor>;

// Results of `Rule` for concrete and symbolic dims.
template <class Rule>
std::vector<TensorType> concrete_rule(const std::vector<TensorType>& in, Attrs& attrs,
                                      const InferContext& ctx) {
  ConcreteDims alg(ctx);
  return Rule::apply(alg, in, attrs);
}
template <class Rule>
SymResults symbolic_rule(SymbolicDims& alg, const std::vector<SymTensor>& in) {
  return Rule::apply(alg, in, alg.attrs());
}
template <class Rule>
constexpr ShapeRule rule_of() {
  return {&concrete_rule<Rule>, &symbolic_rule<Rule>};
}

template <class A>
typename A::Results of_rank_like(A& alg, const typename A::Tensor& x) {
  return alg.result(alg.of_rank(alg.dtype(x), alg.rank(x)));
}

struct SameShape {
  template <class A>
  static typename A::Results apply(A& alg, const In<A>& in, typename A::AttrMap&) {
    return alg.result(in[0]);
  }
};

struct Broadcast {
  template <class A>
  static typename A::Results apply(A& alg, const In<A>& in, typename A::AttrMap&) {
    alg.require_same_dtype(in);
    const auto &a = in[0], &b = in[1];
    if (alg.rank(a) != alg.rank(b)) {
      if constexpr (A::kSymbolic)
        alg.fail(fmt::format(
            "'{}' operands have ranks {} and {} ({} and {}); they need the same rank (use "
            "reshape to add size-1 dims)",
            alg.op(), alg.rank(a), alg.rank(b), alg.str(a), alg.str(b)));
      else
        alg.fail(fmt::format(
            "operands have ranks {} and {} ({} and {}); elementwise operands need the same rank "
            "(use reshape to add size-1 dims)",
            alg.rank(a), alg.rank(b), alg.str(a), alg.str(b)));
    }
    if (!alg.known(in)) return of_rank_like(alg, a);
    const auto &da = alg.dims(a), &db = alg.dims(b);
    std::vector<typename A::Dim> out;
    out.reserve(da.size());
    for (size_t i = 0; i < da.size(); ++i)
      out.push_back(alg.broadcast(da[i], db[i], i, [&] {
        return fmt::format(
            "shapes {} and {} do not broadcast: dim {} is {} vs {} (only size-1 dims broadcast)",
            alg.str(a), alg.str(b), i, dim_text(da[i]), dim_text(db[i]));
      }));
    return alg.result(alg.tensor(alg.dtype(a), std::move(out)));
  }
};

struct Matmul {
  template <class A>
  static typename A::Results apply(A& alg, const In<A>& in, typename A::AttrMap&) {
    alg.require_same_dtype(in);
    const auto &a = in[0], &b = in[1];
    if (alg.rank(a) < 2 || alg.rank(b) < 2 || alg.rank(a) != alg.rank(b))
      alg.fail(fmt::format("matmul needs two operands of the same rank >= 2, got {} and {}",
                           alg.str(a), alg.str(b)));
    if (!alg.known(in)) return of_rank_like(alg, a);
    const auto &da = alg.dims(a), &db = alg.dims(b);
    const size_t r = da.size();
    alg.require_eq(
        da[r - 1], db[r - 2],
        [&] {
          return fmt::format("matmul's contraction dims to agree ({} x {})", alg.str(a),
                             alg.str(b));
        },
        [&] {
          return fmt::format(
              "matmul contraction mismatch: {} x {} (last dim of the first operand, {}, must "
              "equal the second-to-last dim of the second, {})",
              alg.str(a), alg.str(b), dim_text(da[r - 1]), dim_text(db[r - 2]));
        });
    std::vector<typename A::Dim> out(r);
    for (size_t i = 0; i + 2 < r; ++i)
      out[i] = alg.broadcast(da[i], db[i], i, [&] {
        return fmt::format("matmul batch dims do not broadcast: {} x {} at dim {}", alg.str(a),
                           alg.str(b), i);
      });
    out[r - 2] = da[r - 2];
    out[r - 1] = db[r - 1];
    return alg.result(alg.tensor(alg.dtype(a), std::move(out)));
  }
};

struct Reduction {
  template <class A>
  static typename A::Results apply(A& alg, const In<A>& in, typename A::AttrMap& attrs) {
    using Dim = typename A::Dim;
    const auto& x = in[0];
    const int64_t d = alg.dim_attr(attrs, "dim", alg.rank(x));
    const Dim to = alg.int_attr(attrs, "to");
    auto cannot = [&] {
      return fmt::format("cannot reduce dim {} of size {} to {}: the result size must divide it", d,
                         dim_text(alg.dims(x)[d]), dim_text(to));
    };
    alg.require_le(
        Dim(1), to, [] { return std::string("the reduction size `to` to be >= 1"); }, cannot);
    if (!alg.known(in)) return of_rank_like(alg, x);
    auto s = alg.dims(x);
    alg.require_divides(
        s[d], to,
        [&] {
          return fmt::format("the reduction size {} to divide dim {} ({})", dim_text(to), d,
                             dim_text(s[d]));
        },
        cannot);
    s[d] = to;
    return alg.result(alg.tensor(alg.dtype(x), std::move(s)));
  }
};

struct Reshape {
  template <class A>
  static typename A::Results apply(A& alg, const In<A>& in, typename A::AttrMap& attrs) {
    using Dim = typename A::Dim;
    const auto& x = in[0];
    const auto& shape = alg.list_attr(attrs, "shape");
    if constexpr (A::kSymbolic)
      if (shape.empty() || shape.size() > 64) alg.fail("reshape's shape needs 1 to 64 entries");
    for (const Dim& d : shape)
      alg.require_le(
          Dim(1), d, [] { return std::string("every reshape dim to be >= 1"); },
          [&] { return fmt::format("reshape to {}: every dim must be >= 1", alg.str(shape)); });
    if (alg.known(in)) {
      const Dim from = alg.product(alg.dims(x)), to = alg.product(shape);
      alg.require_eq(
          from, to,
          [&] {
            return fmt::format("reshape to keep the number of elements ({} to {})", alg.str(x),
                               alg.str(shape));
          },
          [&] {
            return fmt::format("cannot reshape {} ({} elements) to {} ({} elements)", alg.str(x),
                               dim_text(from), alg.str(shape), dim_text(to));
          });
    }
    return alg.result(alg.tensor(alg.dtype(x), shape));
  }
};

struct Concat {
  template <class A>
  static typename A::Results apply(A& alg, const In<A>& in, typename A::AttrMap& attrs) {
    alg.require_same_dtype(in);
    const auto& x = in[0];
    const int64_t d = alg.dim_attr(attrs, "dim", alg.rank(x));
    auto mismatch = [&](size_t k) {
      return fmt::format(
          "concat along dim {}: operand {} has shape {} but operand 1 has {}; all other dims "
          "must agree",
          d, k + 1, alg.str(in[k]), alg.str(x));
    };
    for (size_t k = 1; k < in.size(); ++k)
      if (alg.rank(in[k]) != alg.rank(x)) alg.fail(mismatch(k));
    if (!alg.known(in)) return of_rank_like(alg, x);
    auto s = alg.dims(x);
    for (size_t k = 1; k < in.size(); ++k) {
      const auto& t = alg.dims(in[k]);
      for (size_t j = 0; j < s.size(); ++j) {
        if (static_cast<int64_t>(j) == d) continue;
        alg.require_eq(
            s[j], t[j],
            [&] {
              return fmt::format("concat operands to agree outside dim {} (operand {} at dim {})",
                                 d, k + 1, j);
            },
            [&] { return mismatch(k); });
      }
      s[d] += t[d];
    }
    return alg.result(alg.tensor(alg.dtype(x), std::move(s)));
  }
};

struct Split {
  template <class A>
  static typename A::Results apply(A& alg, const In<A>& in, typename A::AttrMap& attrs) {
    using Dim = typename A::Dim;
    const auto& x = in[0];
    const int64_t d = alg.dim_attr(attrs, "dim", alg.rank(x));
    auto cannot = [&](const std::string& parts) {
      return fmt::format("cannot split dim {} of size {} into {} equal parts", d,
                         dim_text(alg.dims(x)[d]), parts);
    };
    const int64_t parts = alg.const_attr(
        attrs, "parts", 1, [&] { return cannot(dim_text(alg.int_attr(attrs, "parts"))); });
    if constexpr (A::kSymbolic)
      if (parts > 64) alg.fail("split into more than 64 parts");
    const auto count = static_cast<size_t>(parts);
    if (!alg.known(in))
      return alg.parts(std::vector(count, alg.of_rank(alg.dtype(x), alg.rank(x))));
    auto s = alg.dims(x);
    alg.require_divides(
        s[d], Dim(parts),
        [&] { return fmt::format("{} parts to divide dim {} ({})", parts, d, dim_text(s[d])); },
        [&] { return cannot(std::to_string(parts)); });
    s[d] = alg.quotient(s[d], parts);
    return alg.parts(std::vector(count, alg.tensor(alg.dtype(x), std::move(s))));
  }
};

struct Repeat {
  template <class A>
  static typename A::Results apply(A& alg, const In<A>& in, typename A::AttrMap& attrs) {
    using Dim = typename A::Dim;
    const auto& x = in[0];
    const int64_t d = alg.dim_attr(attrs, "dim", alg.rank(x));
    const Dim times = alg.int_attr(attrs, "times");
    alg.require_le(
        Dim(1), times, [] { return std::string("repeat times to be >= 1"); },
        [&] { return fmt::format("repeat times={} must be >= 1", dim_text(times)); });
    if (!alg.known(in)) return of_rank_like(alg, x);
    auto s = alg.dims(x);
    s[d] *= times;
    return alg.result(alg.tensor(alg.dtype(x), std::move(s)));
  }
};

struct Normalizing {
  template <class A>
  static typename A::Results apply(A& alg, const In<A>& in, typename A::AttrMap& attrs) {
    alg.dim_attr(attrs, "dim", alg.rank(in[0]));
    if (alg.has_attr(attrs, "eps") && alg.rational_attr(attrs, "eps") < Rational(0))
      alg.fail("eps must be >= 0");
    return alg.result(in[0]);
  }
};

// ---- Model-only elementwise rows

template <class A>
void require_one_rank(A& alg, const In<A>& in) {
  for (size_t i = 1; i < in.size(); ++i)
    if (alg.rank(in[i]) != alg.rank(in[0]))
      alg.fail(fmt::format(
          "{}'s operands have ranks {} and {} ({} and {}); they need the same rank (use "
          "reshape to add size-1 dims)",
          alg.op(), alg.rank(in[0]), alg.rank(in[i]), alg.str(in[0]), alg.str(in[i])));
}

// Every operand's dims broadcast, dim by dim; the result has `dtype`.
template <class A>
typename A::Tensor broadcast_all(A& alg, const In<A>& in, DType dtype) {
  if (!alg.known(in)) return alg.of_rank(dtype, alg.rank(in[0]));
  auto out = alg.dims(in[0]);
  for (size_t i = 0; i < out.size(); ++i)
    for (size_t k = 1; k < in.size(); ++k)
      out[i] = alg.broadcast(out[i], alg.dims(in[k])[i], i, [&] {
        return fmt::format("{}'s operands {} and {} do not broadcast at dim {}", alg.op(),
                           alg.str(in[0]), alg.str(in[k]), i);
      });
  return alg.tensor(dtype, std::move(out));
}

struct Elementwise {
  template <class A>
  static typename A::Results apply(A& alg, const In<A>& in, typename A::AttrMap&) {
    require_one_rank(alg, in);
    return alg.result(broadcast_all(alg, in, alg.dtype(in[0])));
  }
};

// Comparisons, logical operators, is_nan and is_inf: a bool result; the operands of a comparison
// share a dtype (ONNX requires it: weft never promotes silently).
struct Predicate {
  template <class A>
  static typename A::Results apply(A& alg, const In<A>& in, typename A::AttrMap&) {
    require_one_rank(alg, in);
    if (in.size() == 2 && alg.dtype(in[0]) != alg.dtype(in[1]))
      alg.fail(fmt::format("{}'s operands are {} and {}; they must have the same dtype (cast one)",
                           alg.op(), dtype_name(alg.dtype(in[0])), dtype_name(alg.dtype(in[1]))));
    return alg.result(broadcast_all(alg, in, DType::boolean));
  }
};

struct Where {
  template <class A>
  static typename A::Results apply(A& alg, const In<A>& in, typename A::AttrMap&) {
    require_one_rank(alg, in);
    if (alg.dtype(in[1]) != alg.dtype(in[2]))
      alg.fail(fmt::format("where's values are {} and {}; they must have the same dtype",
                           dtype_name(alg.dtype(in[1])), dtype_name(alg.dtype(in[2]))));
    return alg.result(broadcast_all(alg, in, alg.dtype(in[1])));
  }
};

struct Cast {
  template <class A>
  static typename A::Results apply(A& alg, const In<A>& in, typename A::AttrMap& attrs) {
    const auto& to = alg.int_attr(attrs, "to");
    std::optional<int64_t> code = alg.constant(to);
    const CastTarget* t = code ? cast_target(*code) : nullptr;
    if (!t) {
      std::string known;
      for (const CastTarget& c : cast_targets()) known += fmt::format(" {}={}", c.code, c.name);
      alg.fail(fmt::format("cast to={} is not a dtype code weft casts to (ONNX's codes:{})",
                           dim_text(to), known));
    }
    auto out = in[0];
    out.dtype = cast_result_dtype(*t);
    return alg.result(std::move(out));
  }
};

struct Clip {
  template <class A>
  static typename A::Results apply(A& alg, const In<A>& in, typename A::AttrMap& attrs) {
    if (alg.rational_attr(attrs, "max") < alg.rational_attr(attrs, "min"))
      alg.fail("clip's min must be <= its max");
    return alg.result(in[0]);
  }
};

// ---- Block graphs: concrete only

[[noreturn]] void fail(const std::string& message) {
  throw UserError(message);
}

const char* grid_axis_name(int g) {
  return g == 0 ? "x" : g == 1 ? "y" : "z";
}

// Pads a grid map to 3 entries and checks each entry against the grid and the tensor's rank.
std::vector<int64_t> take_grid_map(Attrs& attrs, const char* name, size_t rank,
                                   const InferContext& ctx) {
  std::vector<int64_t> m = attrs.get_list(name);
  if (m.size() > 3)
    fail(fmt::format("{} has {} entries; a grid has at most 3 dims", name, m.size()));
  m.resize(3, -1);
  std::set<int64_t> used;
  for (int g = 0; g < 3; ++g) {
    int64_t d = m[g];
    if (d == -1) continue;
    if (d < 0 || d >= static_cast<int64_t>(rank))
      fail(fmt::format("{} entry for grid dim {} is {}, not a dim of a rank-{} tensor", name,
                       grid_axis_name(g), d, rank));
    if (ctx.grid[g] == 1)
      fail(fmt::format("grid dim {} has size 1, so its {} entry must be '-' (got {})",
                       grid_axis_name(g), name, d));
    if (!used.insert(d).second) fail(fmt::format("{} maps two grid dims to data dim {}", name, d));
  }
  attrs.set(name, m);
  return m;
}

std::vector<TensorType> infer_iter(const std::vector<TensorType>& in, Attrs& attrs,
                                   const InferContext& ctx) {
  Shape s = in[0].shape;
  auto imap = take_grid_map(attrs, "imap", s.size(), ctx);
  for (int g = 0; g < 3; ++g) {
    if (imap[g] < 0) continue;
    if (s[imap[g]] % ctx.grid[g] != 0)
      fail(
          fmt::format("imap cuts dim {} (size {}) into {} blocks along grid dim {}, which does "
                      "not divide it",
                      imap[g], s[imap[g]], ctx.grid[g], grid_axis_name(g)));
    s[imap[g]] /= ctx.grid[g];
  }
  int64_t f = attrs.get_int("fmap");
  if (f != -1) {
    if (f < 0 || f >= static_cast<int64_t>(s.size()))
      fail(fmt::format("fmap={} is not a dim of a rank-{} tensor", f, s.size()));
    if (s[f] % ctx.loop != 0)
      fail(
          fmt::format("fmap cuts dim {} (size {} per block) into {} iterations, which does not "
                      "divide it",
                      f, s[f], ctx.loop));
    s[f] /= ctx.loop;
  }
  return {TensorType{in[0].dtype, s}};
}

std::vector<TensorType> infer_accum_concat(const std::vector<TensorType>& in, Attrs& attrs,
                                           const InferContext& ctx) {
  Shape s = in[0].shape;
  int64_t d = ConcreteDims::dim_attr(attrs, "dim", static_cast<int>(s.size()));
  s[d] *= ctx.loop;
  return {TensorType{in[0].dtype, s}};
}

std::vector<TensorType> infer_save(const std::vector<TensorType>& in, Attrs& attrs,
                                   const InferContext& ctx) {
  Shape s = in[0].shape;
  auto omap = take_grid_map(attrs, "omap", s.size(), ctx);
  for (int g = 0; g < 3; ++g) {
    if (ctx.grid[g] > 1 && omap[g] < 0)
      fail(
          fmt::format("omap entry for grid dim {} (size {}) is '-', but blocks along it must "
                      "write disjoint parts of the output: map it to a data dim",
                      grid_axis_name(g), ctx.grid[g]));
    if (omap[g] >= 0) s[omap[g]] *= ctx.grid[g];
  }
  return {TensorType{in[0].dtype, s}};
}

}  // namespace

constinit const ShapeRule same_shape = rule_of<SameShape>();
constinit const ShapeRule broadcast = rule_of<Broadcast>();
constinit const ShapeRule matmul = rule_of<Matmul>();
constinit const ShapeRule reduction = rule_of<Reduction>();
constinit const ShapeRule reshape = rule_of<Reshape>();
constinit const ShapeRule concat = rule_of<Concat>();
constinit const ShapeRule split = rule_of<Split>();
constinit const ShapeRule repeat = rule_of<Repeat>();
constinit const ShapeRule normalizing = rule_of<Normalizing>();
constinit const ShapeRule iter = {&infer_iter, nullptr};
constinit const ShapeRule save = {&infer_save, nullptr};
constinit const ShapeRule accum_concat = {&infer_accum_concat, nullptr};
constinit const ShapeRule elementwise = rule_of<Elementwise>();
constinit const ShapeRule predicate = rule_of<Predicate>();
constinit const ShapeRule where = rule_of<Where>();
constinit const ShapeRule cast = rule_of<Cast>();
constinit const ShapeRule clip = rule_of<Clip>();

}  // namespace weft::shape_rules
