// The reference interpreter: evaluates a kernel graph (pre-defined operators, graph-defined kernels
// block by block and iteration by iteration, thread graphs) over any ValueDomain. It is the ground
// truth every later stage is compared against, so it favours plain loops over cleverness.
#pragma once

#include <array>
#include <optional>
#include <span>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"
#include "interp/domain.h"
#include "ir/expand_composites.h"
#include "ir/graph.h"

namespace weft {

// Throws UserError unless `shapes` match the graph's input shapes (count and shape; the declared
// dtype does not constrain the value domain).
void check_input_shapes(const Graph& g, const std::vector<Shape>& shapes);

// Runs `g` in f32 (f32 = true) or f64; inputs and outputs are carried as doubles. Throws
// EvaluationAbandoned at a matmul that starts after `give_up`.
std::vector<Tensor<double>> evaluate_real(const Graph& g, const std::vector<Tensor<double>>& inputs,
                                          bool f32, GiveUpAt give_up = {});

namespace interp_detail {

template <ValueDomain D>
class Evaluator {
 public:
  using V = typename D::Value;
  using T = Tensor<V>;

  explicit Evaluator(const D& d) : d_(d) {}

  // A kernel or thread graph: ops in definition order over whole tensors.
  std::vector<T> run_dataflow(const Graph& g, const std::vector<const T*>& inputs) {
    Env env(g, inputs);
    for (const Op& op : g.ops) {
      std::vector<const T*> in = env.gather(op.inputs);
      std::vector<T> out;
      if (op.kind == OpKind::kernel)
        out = run_block_graph(*op.body, in);
      else if (op.kind == OpKind::thread)
        out = run_dataflow(*op.body, in);
      else
        out = primitive(op, in);
      env.set_all(op.outputs, std::move(out));
    }
    std::vector<T> result;
    for (ValueId v : g.outputs) result.push_back(env.get(v));
    return result;
  }

 private:
  // Values by id: graph inputs are borrowed (kernel operands can be large), results are owned.
  class Env {
   public:
    Env(const Graph& g, const std::vector<const T*>& inputs)
        : own_(g.values.size()), ref_(g.values.size(), nullptr) {
      WEFT_CHECK(inputs.size() == g.inputs.size(), "{} inputs for {} graph inputs", inputs.size(),
                 g.inputs.size());
      for (size_t i = 0; i < inputs.size(); ++i) ref_[g.inputs[i]] = inputs[i];
    }
    const T& get(ValueId v) const {
      WEFT_CHECK(ref_[v] != nullptr, "value {} read before it is computed", v);
      return *ref_[v];
    }
    void set(ValueId v, T t) {
      own_[v] = std::move(t);
      ref_[v] = &own_[v];
    }
    void set_all(const std::vector<ValueId>& ids, std::vector<T> ts) {
      WEFT_CHECK(ids.size() == ts.size(), "{} results for {} values", ts.size(), ids.size());
      for (size_t i = 0; i < ids.size(); ++i) set(ids[i], std::move(ts[i]));
    }
    std::vector<const T*> gather(const std::vector<ValueId>& ids) const {
      std::vector<const T*> out;
      for (ValueId v : ids) out.push_back(&get(v));
      return out;
    }

   private:
    std::vector<T> own_;  // sized once: pointers into it stay valid
    std::vector<const T*> ref_;
  };

  // Per-block state of one accumulator op.
  struct Accum {
    std::optional<T> value;  // accum_sum: running sum; accum_concat: the whole result
    std::vector<T> history;  // accum_max: every iteration's tile
  };

  // A graph-defined kernel: every block, every iteration, exactly as the block graph says.
  std::vector<T> run_block_graph(const Graph& b, const std::vector<const T*>& operands) {
    const V zero = d_.constant(Rational(0));
    std::vector<T> outputs;
    std::vector<int> save_slot(b.values.size(), -1);
    for (size_t i = 0; i < b.outputs.size(); ++i) {
      outputs.emplace_back(b.type(b.outputs[i]).shape, zero);
      save_slot[b.outputs[i]] = static_cast<int>(i);
    }
    for (int64_t bz = 0; bz < b.grid[2]; ++bz)
      for (int64_t by = 0; by < b.grid[1]; ++by)
        for (int64_t bx = 0; bx < b.grid[0]; ++bx) {
          const std::array<int64_t, 3> block = {bx, by, bz};
          Env env(b, operands);
          std::vector<Accum> accums(b.ops.size());
          for (int64_t it = 0; it < b.loop; ++it)
            for (size_t oi = 0; oi < b.ops.size(); ++oi) {
              const Op& op = b.ops[oi];
              if (op.stage != Stage::loop) continue;
              if (op.kind == OpKind::iter) {
                env.set(op.outputs[0], load_tile(b, op, env.get(op.inputs[0]), block, it));
              } else if (is_accumulator(op.kind)) {
                accumulate(b, op, env.get(op.inputs[0]), it, accums[oi]);
              } else if (op.kind == OpKind::save) {
                WEFT_USER_ERROR(op.loc, "save must be in the post stage (after 'after:')");
              } else {
                run_block_op(op, env);
              }
            }
          for (size_t oi = 0; oi < b.ops.size(); ++oi)
            if (is_accumulator(b.ops[oi].kind))
              env.set(b.ops[oi].outputs[0], finish_accum(b.ops[oi], accums[oi]));
          for (const Op& op : b.ops) {
            if (op.stage != Stage::post) continue;
            if (op.kind == OpKind::iter) {
              if (op.attrs.get_int("fmap") != -1)
                WEFT_USER_ERROR(op.loc,
                                "an iter after 'after:' loads its slice once; its fmap "
                                "must be '-'");
              env.set(op.outputs[0], load_tile(b, op, env.get(op.inputs[0]), block, 0));
            } else if (op.kind == OpKind::save) {
              const T& tile = env.get(op.inputs[0]);
              const auto& omap = op.attrs.get_list("omap");
              std::vector<int64_t> start(tile.shape.size(), 0);
              for (int g = 0; g < 3; ++g)
                if (omap[g] >= 0) start[omap[g]] = block[g] * tile.shape[omap[g]];
              place_box(outputs[save_slot[op.outputs[0]]], tile, start);
            } else if (is_accumulator(op.kind)) {
              WEFT_USER_ERROR(op.loc, "accumulators belong to the loop stage");
            } else {
              run_block_op(op, env);
            }
          }
        }
    return outputs;
  }

  void run_block_op(const Op& op, Env& env) {
    std::vector<const T*> in = env.gather(op.inputs);
    if (op.kind == OpKind::thread)
      env.set_all(op.outputs, run_dataflow(*op.body, in));
    else
      env.set_all(op.outputs, primitive(op, in));
  }

  // The block's imap slice of a kernel operand, then iteration `it`'s fmap chunk.
  T load_tile(const Graph& b, const Op& op, const T& whole, const std::array<int64_t, 3>& block,
              int64_t it) {
    const auto& imap = op.attrs.get_list("imap");
    Shape sizes = whole.shape;
    std::vector<int64_t> start(sizes.size(), 0);
    for (int g = 0; g < 3; ++g) {
      if (imap[g] < 0) continue;
      sizes[imap[g]] /= b.grid[g];
      start[imap[g]] = block[g] * sizes[imap[g]];
    }
    int64_t f = op.attrs.get_int("fmap");
    if (f >= 0) {
      sizes[f] /= b.loop;
      start[f] += it * sizes[f];
    }
    return slice_box(whole, start, sizes);
  }

  void accumulate(const Graph& b, const Op& op, const T& tile, int64_t it, Accum& acc) {
    switch (op_info(op.kind).symbolic) {
      case Symbolic::sum:
        if (!acc.value)
          acc.value = tile;
        else
          for (size_t i = 0; i < tile.data.size(); ++i)
            acc.value->data[i] = d_.add(acc.value->data[i], tile.data[i]);
        return;
      case Symbolic::select: {  // accum_concat: each iteration's tile in its slot
        int64_t dim = op.attrs.get_int("dim");
        if (!acc.value) {
          Shape s = tile.shape;
          s[dim] *= b.loop;
          acc.value = T(s, tile.data.empty() ? V{} : tile.data[0]);
        }
        place_dim(*acc.value, tile, dim, it * tile.shape[dim]);
        return;
      }
      case Symbolic::max:
        acc.history.push_back(tile);
        return;
      case Symbolic::elementwise:
      case Symbolic::contraction:
      case Symbolic::mean:
      case Symbolic::join:
      case Symbolic::expansion:
      case Symbolic::body:
      case Symbolic::none:
        break;
    }
    WEFT_CHECK(false, "'{}' is not an accumulator", op_info(op.kind).name);
  }

  T finish_accum(const Op& op, Accum& acc) {
    if (op_info(op.kind).symbolic != Symbolic::max) {
      WEFT_CHECK(acc.value.has_value(), "accumulator never ran");
      return std::move(*acc.value);
    }
    WEFT_CHECK(!acc.history.empty(), "accumulator never ran");
    T out = acc.history[0];
    std::vector<V> group(acc.history.size());
    for (size_t e = 0; e < out.data.size(); ++e) {
      for (size_t i = 0; i < acc.history.size(); ++i) group[i] = acc.history[i].data[e];
      out.data[e] = d_.reduce_max(std::span<const V>(group));
    }
    return out;
  }

  // Pre-defined operators, dispatched on their class in the op table.
  std::vector<T> primitive(const Op& op, const std::vector<const T*>& in) {
    const OpInfo& info = op_info(op.kind);
    switch (info.op_class) {
      case OpClass::unary:
        return {unary(op, *in[0])};
      case OpClass::binary:
        return {binary(op, *in[0], *in[1])};
      case OpClass::matmul:
        return {matmul(*in[0], *in[1])};
      case OpClass::reduction:
        return {reduce(op, *in[0])};
      case OpClass::movement:
        return movement(op, in);
      case OpClass::composite:
        WEFT_CHECK(false, "'{}' reached the interpreter unexpanded", info.name);
      case OpClass::structure:
      case OpClass::hierarchy:
      case OpClass::model:
        break;
    }
    WEFT_CHECK(false, "'{}' cannot be evaluated here", info.name);
    return {};
  }

  T unary(const Op& op, const T& x) {
    T out = x;
    auto f = d_.elementwise(op.kind, op.attrs);
    for (V& v : out.data) v = f(v, V{});
    return out;
  }

  // Strides of `s` seen from a broadcast result of `out` (0 along broadcast dims).
  static std::vector<int64_t> broadcast_strides(const Shape& s, const Shape& out) {
    std::vector<int64_t> st = strides_of(s);
    for (size_t d = 0; d < s.size(); ++d)
      if (s[d] != out[d]) st[d] = 0;
    return st;
  }

  T binary(const Op& op, const T& a, const T& b) {
    auto apply = d_.elementwise(op.kind, op.attrs);
    WEFT_CHECK(a.shape.size() == b.shape.size(), "binary rank mismatch");
    Shape s(a.shape.size());
    for (size_t d = 0; d < s.size(); ++d) s[d] = std::max(a.shape[d], b.shape[d]);
    T out;
    out.shape = s;
    out.data.reserve(static_cast<size_t>(numel(s)));
    if (a.shape == b.shape) {
      for (size_t i = 0; i < a.data.size(); ++i) out.data.push_back(apply(a.data[i], b.data[i]));
      return out;
    }
    auto sa = broadcast_strides(a.shape, s), sb = broadcast_strides(b.shape, s);
    std::vector<int64_t> idx(s.size(), 0);
    int64_t oa = 0, ob = 0, n = numel(s);
    for (int64_t i = 0; i < n; ++i) {
      out.data.push_back(apply(a.data[oa], b.data[ob]));
      for (int d = static_cast<int>(s.size()) - 1; d >= 0; --d) {
        oa += sa[d];
        ob += sb[d];
        if (++idx[d] < s[d]) break;
        oa -= sa[d] * s[d];
        ob -= sb[d] * s[d];
        idx[d] = 0;
      }
    }
    return out;
  }

  T matmul(const T& a, const T& b) {
    size_t r = a.shape.size();
    int64_t m = a.shape[r - 2], k = a.shape[r - 1], n = b.shape[r - 1];
    WEFT_CHECK(b.shape.size() == r && b.shape[r - 2] == k, "matmul shape mismatch");
    Shape batch(r - 2);
    for (size_t d = 0; d + 2 < r; ++d) batch[d] = std::max(a.shape[d], b.shape[d]);
    Shape a_batch(a.shape.begin(), a.shape.end() - 2), b_batch(b.shape.begin(), b.shape.end() - 2);
    auto sa = broadcast_strides(a_batch, batch), sb = broadcast_strides(b_batch, batch);
    Shape out_shape = batch;
    out_shape.push_back(m);
    out_shape.push_back(n);
    T out(out_shape, d_.constant(Rational(0)));
    std::vector<int64_t> idx(batch.size(), 0);
    for (int64_t bi = 0; bi < numel(batch); ++bi) {
      int64_t ia = 0, ib = 0, rem = bi;
      for (int d = static_cast<int>(batch.size()) - 1; d >= 0; --d) {
        int64_t i = rem % batch[d];
        rem /= batch[d];
        ia += i * sa[d];
        ib += i * sb[d];
      }
      matmul_2d(a.data.data() + ia * m * k, b.data.data() + ib * k * n,
                out.data.data() + bi * m * n, m, k, n);
    }
    return out;
  }

  void matmul_2d(const V* A, const V* B, V* C, int64_t m, int64_t k, int64_t n) {
    if constexpr (HasMatmul<D>) {
      d_.matmul(A, B, C, m, k, n);
    } else {
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          V acc = d_.mul(A[i * k], B[j]);
          for (int64_t kk = 1; kk < k; ++kk)
            acc = d_.add(acc, d_.mul(A[i * k + kk], B[kk * n + j]));
          C[i * n + j] = acc;
        }
    }
  }

  // Views `t` as [outer, size of dim, inner].
  static std::array<int64_t, 3> around(const Shape& s, int64_t dim) {
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < dim; ++d) outer *= s[d];
    for (size_t d = static_cast<size_t>(dim) + 1; d < s.size(); ++d) inner *= s[d];
    return {outer, s[dim], inner};
  }

  T reduce(const Op& op, const T& x) {
    int64_t dim = op.attrs.get_int("dim"), to = op.attrs.get_int("to");
    auto [outer, size, inner] = around(x.shape, dim);
    int64_t group = size / to;
    Shape s = x.shape;
    s[dim] = to;
    T out;
    out.shape = s;
    out.data.reserve(static_cast<size_t>(numel(s)));
    const V inv = d_.constant(*Rational::make(1, group));
    const Symbolic kind = op_info(op.kind).symbolic;
    std::vector<V> members(static_cast<size_t>(group));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t g = 0; g < to; ++g)
        for (int64_t in = 0; in < inner; ++in) {
          // Strided groups: element g of the result combines g, g + to, g + 2 to, ... (the
          // layout an omap gives per-block partial results).
          const int64_t base = (o * size + g) * inner + in, stride = to * inner;
          auto at = [&](int64_t e) { return x.data[base + e * stride]; };
          if (kind == Symbolic::max) {
            for (int64_t e = 0; e < group; ++e) members[e] = at(e);
            out.data.push_back(d_.reduce_max(std::span<const V>(members)));
            continue;
          }
          V acc = at(0);
          for (int64_t e = 1; e < group; ++e) acc = d_.add(acc, at(e));
          out.data.push_back(kind == Symbolic::mean ? d_.mul(acc, inv) : acc);
        }
    return out;
  }

  std::vector<T> movement(const Op& op, const std::vector<const T*>& in) {
    const T& x = *in[0];
    switch (op.kind) {
      case OpKind::reshape:
        return {T(op.attrs.get_list("shape"), x.data)};
      case OpKind::concat: {
        int64_t dim = op.attrs.get_int("dim");
        Shape s = x.shape;
        s[dim] = 0;
        for (const T* t : in) s[dim] += t->shape[dim];
        T out(s, x.data.empty() ? V{} : x.data[0]);
        int64_t off = 0;
        for (const T* t : in) {
          place_dim(out, *t, dim, off);
          off += t->shape[dim];
        }
        return {out};
      }
      case OpKind::split: {
        int64_t dim = op.attrs.get_int("dim"), parts = op.attrs.get_int("parts");
        int64_t len = x.shape[dim] / parts;
        std::vector<T> out;
        for (int64_t p = 0; p < parts; ++p) out.push_back(slice_dim(x, dim, p * len, len));
        return out;
      }
      case OpKind::repeat: {
        int64_t dim = op.attrs.get_int("dim"), times = op.attrs.get_int("times");
        Shape s = x.shape;
        s[dim] *= times;
        T out(s, x.data.empty() ? V{} : x.data[0]);
        for (int64_t t = 0; t < times; ++t) place_dim(out, x, dim, t * x.shape[dim]);
        return {out};
      }
        WEFT_CASES_NOT_MOVEMENT
        break;
    }
    WEFT_CHECK(false, "'{}' is not a movement op", op_info(op.kind).name);
    return {};
  }

  const D& d_;
};

}  // namespace interp_detail

// Evaluates kernel graph `g` on `inputs` (one per graph input, in order) over `domain`; returns one
// tensor per graph output. Composite operators are expanded first. Throws UserError if the inputs
// do not match the graph's input shapes; exceptions thrown by the domain (e.g. a zero divisor)
// propagate unchanged.
template <ValueDomain D>
std::vector<Tensor<typename D::Value>> evaluate(
    const Graph& g, const std::vector<Tensor<typename D::Value>>& inputs, const D& domain) {
  WEFT_CHECK(g.level == Level::kernel, "evaluate() takes a kernel graph, got a {} graph",
             level_name(g.level));
  std::vector<Shape> shapes;
  for (const auto& t : inputs) shapes.push_back(t.shape);
  check_input_shapes(g, shapes);
  Graph expanded = expand_composites(g);
  std::vector<const Tensor<typename D::Value>*> ptrs;
  for (const auto& t : inputs) ptrs.push_back(&t);
  return interp_detail::Evaluator<D>(domain).run_dataflow(expanded, ptrs);
}

}  // namespace weft
