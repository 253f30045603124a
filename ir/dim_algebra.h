// The two dimension algebras a shape rule (ir/shape_rules.h) is written over: concrete int64_t
// dims, where a failed check throws (µGraphs, and the model executors at run time), and symbolic
// SymExpr dims, where a check is proven, refuted as a located error or kept as a run-time check of
// the binding (model functions, through DeduceContext). A rule reads its operands and attributes
// and makes its checks only through the algebra, so one text serves both.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "ir/attrs.h"
#include "ir/deduce_context.h"
#include "ir/ops.h"
#include "ir/sym_attrs.h"

namespace weft {

// "[n, 8]", or "[ndim=3]" without dims: the dims of a model-level type.
std::string sym_dims_str(const std::optional<std::vector<SymExpr>>& dims, int rank);

// A model-level tensor type as a shape rule sees it: dims symbolic, or only the rank known.
struct SymTensor {
  DType dtype = DType::f32;
  int rank = 0;
  std::optional<std::vector<SymExpr>> dims;
  std::string str() const;  // "f32[n, 8]", "f32[ndim=3]" (as MType::str)
};

// A rule's results at the model level: one tensor, or a tuple (split's parts).
struct SymResults {
  std::vector<SymTensor> values;
  bool tuple = false;
};

inline std::string dim_text(int64_t d) {
  return std::to_string(d);
}
inline std::string dim_text(const SymExpr& d) {
  return d.str();
}

// Concrete dims. Each check takes two message makers, called only on failure: `what`, the
// symbolic algebra's wording of the requirement (unused here), and `message`, the whole error.
class ConcreteDims {
 public:
  using Dim = int64_t;
  using Tensor = TensorType;
  using AttrMap = Attrs;
  using Results = std::vector<TensorType>;
  static constexpr bool kSymbolic = false;

  explicit ConcreteDims(const InferContext& ctx) : ctx_(ctx) {}
  const InferContext& context() const { return ctx_; }
  // The operator, in the messages of model-only rules (the µGraph layers prefix its name).
  static const char* op() { return "the operator"; }

  static bool known(const std::vector<Tensor>&) { return true; }
  static int rank(const Tensor& t) { return static_cast<int>(t.shape.size()); }
  static DType dtype(const Tensor& t) { return t.dtype; }
  static const Shape& dims(const Tensor& t) { return t.shape; }
  static Tensor tensor(DType dtype, Shape dims) { return {dtype, std::move(dims)}; }
  static Tensor of_rank(DType dtype, int) { return {dtype, {}}; }  // never: dims are known
  static std::string str(const Tensor& t) { return shape_str(t.shape); }
  static std::string str(const Shape& dims) { return shape_str(dims); }
  static Results result(Tensor t) { return {std::move(t)}; }
  static Results parts(std::vector<Tensor> t) { return t; }
  static Dim product(const Shape& dims) { return numel(dims); }
  static Dim quotient(Dim a, int64_t b) { return a / b; }
  static std::optional<int64_t> constant(Dim d) { return d; }

  // A dim attribute, possibly negative, normalized against `rank` in place.
  static int64_t dim_attr(Attrs& attrs, const char* name, int rank);
  static Dim int_attr(const Attrs& a, const char* name) { return a.get_int(name); }
  // An integer attribute that must be at least `lo` (`message` otherwise).
  template <class Message>
  static int64_t const_attr(const Attrs& a, const char* name, int64_t lo, Message&& message) {
    int64_t v = a.get_int(name);
    if (v < lo) fail(message());
    return v;
  }
  static const Shape& list_attr(const Attrs& a, const char* name) { return a.get_list(name); }
  static Rational rational_attr(const Attrs& a, const char* name) { return a.get_rational(name); }
  static bool has_attr(const Attrs& a, const char* name) { return a.has(name); }

  template <class What, class Message>
  static void require_eq(Dim a, Dim b, What&&, Message&& message) {
    if (a != b) fail(message());
  }
  template <class What, class Message>
  static void require_le(Dim a, Dim b, What&&, Message&& message) {
    if (a > b) fail(message());
  }
  // d divides n (d >= 1).
  template <class What, class Message>
  static void require_divides(Dim n, Dim d, What&&, Message&& message) {
    if (n % d != 0) fail(message());
  }
  // Dim i of two broadcast operands: equal, or one of them 1.
  template <class Message>
  static Dim broadcast(Dim a, Dim b, size_t, Message&& message) {
    if (a == b || b == 1) return a;
    if (a == 1) return b;
    fail(message());
  }
  static void require_same_dtype(const std::vector<Tensor>& in);
  [[noreturn]] static void fail(const std::string& message) { throw UserError(message); }

 private:
  const InferContext& ctx_;
};

// Symbolic dims of a call at `ctx`, for operator `op` with attributes `attrs`.
class SymbolicDims {
 public:
  using Dim = SymExpr;
  using Tensor = SymTensor;
  using AttrMap = MAttrs;
  using Results = SymResults;
  static constexpr bool kSymbolic = true;

  SymbolicDims(DeduceContext& ctx, const char* op, MAttrs& attrs)
      : ctx_(ctx), op_(op), attrs_(attrs) {}
  DeduceContext& context() { return ctx_; }
  const char* op() const { return op_; }
  MAttrs& attrs() { return attrs_; }

  static bool known(const std::vector<Tensor>& in);
  static int rank(const Tensor& t) { return t.rank; }
  static DType dtype(const Tensor& t) { return t.dtype; }
  static const std::vector<SymExpr>& dims(const Tensor& t) { return *t.dims; }
  static Tensor tensor(DType dtype, std::vector<SymExpr> dims);
  static Tensor of_rank(DType dtype, int rank) { return {dtype, rank, std::nullopt}; }
  static std::string str(const Tensor& t) { return t.str(); }
  static std::string str(const std::vector<SymExpr>& dims);
  static Results result(Tensor t) { return {{std::move(t)}, false}; }
  static Results parts(std::vector<Tensor> t) { return {std::move(t), true}; }
  static Dim product(const std::vector<SymExpr>& dims);
  static Dim quotient(const Dim& a, int64_t b) { return floordiv(a, SymExpr(b)); }
  static std::optional<int64_t> constant(const Dim& d) { return d.as_constant(); }

  // A dim attribute: a constant in range (normalized in place), else an error at the call.
  int64_t dim_attr(MAttrs& attrs, const char* name, int rank);
  static const SymExpr& int_attr(const MAttrs& a, const char* name) {
    return std::get<SymExpr>(a.at(name));
  }
  template <class Message>
  int64_t const_attr(const MAttrs& a, const char* name, int64_t lo, Message&&) {
    return const_attr_at_least(a, name, lo);
  }
  static const std::vector<SymExpr>& list_attr(const MAttrs& a, const char* name) {
    return std::get<std::vector<SymExpr>>(a.at(name));
  }
  static const Rational& rational_attr(const MAttrs& a, const char* name) {
    return std::get<Rational>(a.at(name));
  }
  static bool has_attr(const MAttrs& a, const char* name) { return a.count(name) != 0; }

  template <class What, class Message>
  void require_eq(const Dim& a, const Dim& b, What&& what, Message&&) {
    ctx_.require_eq(a, b, what());
  }
  template <class What, class Message>
  void require_le(const Dim& a, const Dim& b, What&& what, Message&&) {
    ctx_.require_le(a, b, what());
  }
  template <class What, class Message>
  void require_divides(const Dim& n, const Dim& d, What&& what, Message&&) {
    ctx_.require_eq(floormod(n, d), 0, what());
  }
  template <class Message>
  Dim broadcast(const Dim& a, const Dim& b, size_t i, Message&&) {
    return broadcast_dim(ctx_, a, b, i);
  }
  void require_same_dtype(const std::vector<Tensor>& in) const;
  [[noreturn]] void fail(const std::string& message) const { ctx_.fail(message); }

 private:
  int64_t const_attr_at_least(const MAttrs& a, const char* name, int64_t lo) const;
  DeduceContext& ctx_;
  const char* op_;
  MAttrs& attrs_;
};

}  // namespace weft
