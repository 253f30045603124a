// The fuse step: convolutions and their epilogues as one fused_conv. A clip is recognized by what
// it computes, not how it is spelled: the chain's piecewise-linear function is built exactly
// (rational breakpoints) and must equal a clip, so an importer's relu/neg/shift spelling of Clip,
// a plain relu and a model `clip` are all the same epilogue. SiLU is `silu` or x * sigmoid(x).
#include "model/fuse_conv_epilogues.h"

#include <map>
#include <optional>
#include <set>

#include "ir/ops.h"

namespace weft {
namespace {

using Q = std::optional<Rational>;

Q add(const Rational& a, const Rational& b) {
  return Rational::make(
      static_cast<__int128>(a.num()) * b.den() + static_cast<__int128>(b.num()) * a.den(),
      static_cast<__int128>(a.den()) * b.den());
}
Q mul(const Rational& a, const Rational& b) {
  return Rational::make(static_cast<__int128>(a.num()) * b.num(),
                        static_cast<__int128>(a.den()) * b.den());
}
Q neg(const Rational& a) {
  return Rational::make(-static_cast<__int128>(a.num()), a.den());
}
Q quotient(const Rational& a, const Rational& b) {
  if (b.num() == 0) return std::nullopt;
  return Rational::make(static_cast<__int128>(a.num()) * b.den(),
                        static_cast<__int128>(a.den()) * b.num());
}

// f(x) = slope x + offset on [left, right] (nullopt: unbounded on that side).
struct Piece {
  Q left, right;
  Rational slope, offset;
};

// A function of one real variable that is linear between rational breakpoints: what a chain of
// relu, neg, shift and scale computes, exactly. Any arithmetic overflow makes it unknown.
class PiecewiseLinear {
 public:
  PiecewiseLinear() : pieces_{{std::nullopt, std::nullopt, Rational(1), Rational(0)}} {}
  bool known() const { return known_; }

  // f becomes a f + b.
  void affine(const Rational& a, const Rational& b) {
    for (Piece& p : pieces_) {
      Q slope = mul(p.slope, a), offset = mul(p.offset, a);
      if (offset) offset = add(*offset, b);
      if (!slope || !offset) {
        known_ = false;
        return;
      }
      p.slope = *slope;
      p.offset = *offset;
    }
  }
  // f becomes max(f, 0).
  void relu() {
    std::vector<Piece> out;
    for (const Piece& p : pieces_) {
      const Q minus_offset = neg(p.offset);
      const Q zero = p.slope.num() == 0 || !minus_offset ? Q{} : quotient(*minus_offset, p.slope);
      if (p.slope.num() != 0 && !zero) {
        known_ = false;
        return;
      }
      const bool inside = zero && (!p.left || *p.left < *zero) && (!p.right || *zero < *p.right);
      std::vector<Piece> parts = {p};
      if (inside) {
        parts = {p, p};
        parts[0].right = zero;
        parts[1].left = zero;
      }
      for (Piece& part : parts) {
        std::optional<bool> negative = sign_below_zero(part);
        if (!negative) {
          known_ = false;
          return;
        }
        if (*negative) part.slope = part.offset = Rational(0);
        out.push_back(part);
      }
    }
    pieces_ = std::move(out);
  }
  // f = clip(x, lo, hi) (nullopt: no bound on that side), when it is one.
  std::optional<std::pair<Q, Q>> as_clip() const {
    if (!known_) return std::nullopt;
    std::vector<Piece> merged;
    for (const Piece& p : pieces_)
      if (!merged.empty() && merged.back().slope == p.slope && merged.back().offset == p.offset)
        merged.back().right = p.right;
      else
        merged.push_back(p);
    // [lo constant up to lo] identity [hi constant from hi]; continuity makes the constants the
    // identity piece's ends.
    size_t i = 0;
    Q lo, hi;
    if (merged[i].slope.num() == 0) {
      if (!merged[i].right || merged[i].offset != *merged[i].right) return std::nullopt;
      lo = merged[i].offset;
      ++i;
    }
    if (i >= merged.size() || merged[i].slope != Rational(1) || merged[i].offset != Rational(0))
      return std::nullopt;
    ++i;
    if (i < merged.size()) {
      if (merged[i].slope.num() != 0 || !merged[i].left || merged[i].offset != *merged[i].left)
        return std::nullopt;
      hi = merged[i].offset;
      ++i;
    }
    if (i != merged.size()) return std::nullopt;
    return std::make_pair(lo, hi);
  }

 private:
  // Whether f <= 0 on the piece (it has one sign there: no zero inside), from one point of it.
  static std::optional<bool> sign_below_zero(const Piece& p) {
    const Q sum = p.left && p.right ? add(*p.left, *p.right) : Q{};
    Q x = p.left && p.right ? (sum ? quotient(*sum, Rational(2)) : Q{})
          : p.left          ? add(*p.left, Rational(1))
          : p.right         ? add(*p.right, Rational(-1))
                            : Q{Rational(0)};
    if (!x) return std::nullopt;
    Q v = mul(p.slope, *x);
    if (v) v = add(*v, p.offset);
    if (!v) return std::nullopt;
    return !(Rational(0) < *v);
  }

  std::vector<Piece> pieces_;
  bool known_ = true;
};

const Rational& rational_attr(const Call& c, const char* name) {
  return std::get<Rational>(c.attrs.at(name));
}

// Applies unary operator call `c` to f; false when it is not one the epilogue takes.
bool apply(const Call& c, PiecewiseLinear& f) {
  if (c.kind != CallKind::op || c.args.size() != 1) return false;
  const Rational one(1), zero(0);
  if (c.callee == "relu") {
    f.relu();
  } else if (c.callee == "neg") {
    f.affine(Rational(-1), zero);
  } else if (c.callee == "shift") {
    f.affine(one, rational_attr(c, "offset"));
  } else if (c.callee == "scale") {
    f.affine(rational_attr(c, "factor"), zero);
  } else if (c.callee ==
             "clip") {  // max(x, lo) = relu(x - lo) + lo; min(y, hi) = hi - relu(hi - y)
    const Rational &lo = rational_attr(c, "min"), &hi = rational_attr(c, "max");
    Q minus_lo = neg(lo);
    if (!minus_lo) return false;
    f.affine(one, *minus_lo);
    f.relu();
    f.affine(one, lo);
    f.affine(Rational(-1), hi);
    f.relu();
    f.affine(Rational(-1), hi);
  } else {
    return false;
  }
  return f.known();
}

bool same_dims(const MType& a, const MType& b) {
  return a.kind == MTypeKind::tensor && b.kind == MTypeKind::tensor && a.dtype == b.dtype &&
         a.dims && b.dims && *a.dims == *b.dims;
}

// [1, M, 1, ...] for a result [N, M, *spatial].
bool is_channel_bias(const MType& bias, const MType& result) {
  if (bias.kind != MTypeKind::tensor || bias.dtype != result.dtype || !bias.dims || !result.dims ||
      bias.dims->size() != result.dims->size())
    return false;
  for (size_t d = 0; d < bias.dims->size(); ++d)
    if ((*bias.dims)[d] != (d == 1 ? (*result.dims)[1] : SymExpr(1))) return false;
  return true;
}

bool is_op(const Binding& b, const char* name) {
  return b.call.kind == CallKind::op && b.call.callee == name;
}

class Fuser {
 public:
  explicit Fuser(Function& f) : f_(f) {
    // An if's reads include what its arms read from outside them.
    for (const Block& block : f.blocks)
      for (const Binding& b : block.bindings)
        for (const std::string& name : reads_of(b.call)) ++reads_[name];
    ++reads_[f.result];
  }

  void run(std::vector<ConvFusion>& fusions) {
    for (Block& block : f_.blocks) {
      if (!block.dataflow) continue;
      std::set<size_t> removed;
      std::map<size_t, Binding> replaced;
      std::map<std::string, size_t> index;
      for (size_t i = 0; i < block.bindings.size(); ++i) index[block.bindings[i].var] = i;
      // The one binding of this block reading `var`, when nothing else does and no fusion has
      // taken it (two convolutions summed, as a downsampled residual block ends, both reach the
      // sum: the first takes it, the other's fusion ends before it).
      auto sole_reader = [&](const std::string& var) -> std::optional<size_t> {
        if (reads_[var] != 1) return std::nullopt;
        for (size_t j = index[var] + 1; j < block.bindings.size(); ++j)
          for (const std::string& a : block.bindings[j].call.args)
            if (a == var)
              return removed.count(j) || replaced.count(j) ? std::nullopt : std::optional(j);
        return std::nullopt;
      };
      for (size_t i = 0; i < block.bindings.size(); ++i) {
        const Binding& conv = block.bindings[i];
        if (!is_op(conv, "conv") || conv.type.kind != MTypeKind::tensor ||
            conv.type.dtype != DType::f32 || removed.count(i))
          continue;
        std::vector<size_t> chain = {i};
        // The bias add.
        std::optional<size_t> j = sole_reader(conv.var);
        if (!j || !is_op(block.bindings[*j], "add")) continue;
        const Call& bias_add = block.bindings[*j].call;
        const std::string& bias =
            bias_add.args[0] == conv.var ? bias_add.args[1] : bias_add.args[0];
        if (bias == conv.var || !is_channel_bias(types_[bias], conv.type)) continue;
        chain.push_back(*j);
        std::vector<std::string> args = conv.call.args;
        args.push_back(bias);
        // The residual add.
        std::string last = block.bindings[*j].var;
        if (std::optional<size_t> k = sole_reader(last); k && is_op(block.bindings[*k], "add")) {
          const Call& c = block.bindings[*k].call;
          const std::string& other = c.args[0] == last ? c.args[1] : c.args[0];
          if (other != last && same_dims(types_[other], conv.type)) {
            chain.push_back(*k);
            args.push_back(other);
            last = block.bindings[*k].var;
          }
        }
        // SiLU: the table's silu, or x * sigmoid(x) as exporters write it.
        bool silu = false;
        if (std::optional<size_t> k = sole_reader(last); k && is_op(block.bindings[*k], "silu")) {
          chain.push_back(*k);
          silu = true;
        } else if (reads_[last] == 2) {
          std::optional<size_t> s, product;
          for (size_t k = index[last] + 1; k < block.bindings.size(); ++k)
            if (is_op(block.bindings[k], "sigmoid") && block.bindings[k].call.args[0] == last)
              s = k;
          if (s) product = sole_reader(block.bindings[*s].var);
          if (product && is_op(block.bindings[*product], "mul")) {
            const auto& m = block.bindings[*product].call.args;
            const std::string& gate = block.bindings[*s].var;
            if ((m[0] == last && m[1] == gate) || (m[0] == gate && m[1] == last)) {
              chain.push_back(*s);
              chain.push_back(*product);
              silu = true;
            }
          }
        }
        // Else the longest chain of unary operators after it that is a clip.
        std::pair<Q, Q> bounds;
        if (!silu) {
          PiecewiseLinear f;
          size_t taken = chain.size();
          for (std::string v = last; std::optional<size_t> k = sole_reader(v);) {
            if (!apply(block.bindings[*k].call, f)) break;
            chain.push_back(*k);
            v = block.bindings[*k].var;
            if (auto clip = f.as_clip()) {
              bounds = *clip;
              taken = chain.size();
            }
          }
          chain.resize(taken);
        }
        const Binding& end = block.bindings[chain.back()];
        Binding fused = end;
        fused.call.callee = "fused_conv";
        fused.call.args = args;
        fused.call.attrs = conv.call.attrs;
        fused.call.attrs["min"] = bounds.first.value_or(Rational(-(int64_t{1} << 62)));
        fused.call.attrs["max"] = bounds.second.value_or(Rational(int64_t{1} << 62));
        fused.call.attrs["silu"] = SymExpr(silu ? 1 : 0);
        fused.call.loc = conv.call.loc;
        fused.runtime_checks.clear();
        for (size_t c : chain)
          for (const SymCondition& check : block.bindings[c].runtime_checks)
            fused.runtime_checks.push_back(check);
        for (size_t c : chain) removed.insert(c);
        removed.erase(chain.back());
        replaced[chain.back()] = std::move(fused);
        fusions.push_back({f_.name, conv.var, end.var, static_cast<int>(chain.size())});
      }
      std::vector<Binding> kept;
      for (size_t i = 0; i < block.bindings.size(); ++i) {
        if (removed.count(i)) continue;
        auto it = replaced.find(i);
        kept.push_back(it != replaced.end() ? std::move(it->second) : block.bindings[i]);
      }
      block.bindings = std::move(kept);
    }
  }

 private:
  Function& f_;
  std::map<std::string, int> reads_;
  std::map<std::string, MType> types_ = value_types(f_);
};

}  // namespace

FuseResult fuse_conv_epilogues(const Module& module) {
  FuseResult result{module, {}};
  for (Function& f : result.module.functions) Fuser(f).run(result.fusions);
  return result;
}

}  // namespace weft
