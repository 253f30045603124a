// The ONNX converters built on triangular index masks: Trilu (where(mask, x, 0)) and CumSum (a
// matmul with a triangle of ones along the summed axis), both from the table's operators at
// symbolic sizes, so integer prefix sums (position ids from a mask) stay exact.
#ifdef WEFT_HAVE_ONNX
#include <fmt/format.h>

#include <numeric>

#include "onnx/convert_common.h"

namespace weft::onnx_import {
namespace {

// A constant scalar input `i` (Trilu's k, CumSum's axis), or `fallback` where it is absent.
int64_t constant_scalar_input(I& imp, int i, int64_t fallback, const char* what) {
  if (!imp.has_input(i)) return fallback;
  auto v = imp.ints_of(imp.in(i));
  std::optional<int64_t> c = v && v->size() == 1 ? (*v)[0].as_constant() : std::nullopt;
  if (!c) imp.fail(fmt::format("{} (input {}) must be a constant integer", what, i));
  return *c;
}

// The i64 matrix [rows, cols] of col - row - offset.
std::string index_differences(I& imp, const SymExpr& rows, const SymExpr& cols, int64_t offset) {
  const Value r =
      imp.op("range", {}, {{"start", SymExpr(0)}, {"limit", rows}, {"delta", SymExpr(1)}});
  const Value c =
      imp.op("range", {}, {{"start", SymExpr(0)}, {"limit", cols}, {"delta", SymExpr(1)}});
  const std::string column = imp.reshape(r.name, {rows, SymExpr(1)});
  const std::string row = imp.reshape(c.name, {SymExpr(1), cols});
  Value d = imp.op("sub", {row, column});
  if (offset != 0) d = imp.op("shift", {d.name}, {{"offset", Rational(-offset)}});
  return d.name;
}

// bool [rows, cols]: col - row - offset >= 0 (`at_least`) or <= 0.
Value triangle(I& imp, const SymExpr& rows, const SymExpr& cols, int64_t offset, bool at_least) {
  const std::string d = index_differences(imp, rows, cols, offset);
  const Value zero = constant_value(Tensor<double>(Shape{1, 1}, 0.0), TensorProto::INT64);
  return imp.op(at_least ? "greater_equal" : "less_equal", {d, imp.runtime(zero).first});
}

// Trilu(x, k): the upper (upper=1: col - row >= k) or lower (col - row <= k) triangle of the last
// two dims, zeros elsewhere.
void convert_trilu(I& imp) {
  const std::string x = imp.rt(0);
  const int r = imp.rank(x);
  if (r < 2) imp.fail("Trilu needs a tensor of rank >= 2");
  const int64_t k = constant_scalar_input(imp, 1, 0, "Trilu's k");
  const bool upper = imp.attr_int("upper", 1) != 0;
  const std::vector<SymExpr> d = imp.dims(x);
  const Value tri =
      triangle(imp, d[static_cast<size_t>(r - 2)], d[static_cast<size_t>(r - 1)], k, upper);
  const std::string keep = imp.to_rank(tri.name, r);
  const Value zero =
      constant_value(Tensor<double>(Shape(static_cast<size_t>(r), 1), 0.0), imp.in(0).elem);
  Value out = imp.op("where", {keep, x, imp.runtime(zero).first});
  out.elem = imp.in(0).elem;
  imp.out(0, out);
}

// CumSum(x, axis): x (the axis moved last) times T, T[j, i] = 1 where j contributes to i: j <= i
// (j < i exclusive; j >= i, j > i with reverse). A matmul keeps it one table operator at any size.
void convert_cumsum(I& imp) {
  std::string x = imp.rt(0);
  const int r = imp.rank(x);
  if (r < 1) imp.fail("CumSum needs a tensor of rank >= 1");
  const int64_t axis = imp.axis(constant_scalar_input(imp, 1, 0, "CumSum's axis"), r);
  const bool exclusive = imp.attr_int("exclusive", 0) != 0;
  const bool reverse = imp.attr_int("reverse", 0) != 0;
  const std::vector<SymExpr> d = imp.dims(x);
  const SymExpr n = d[static_cast<size_t>(axis)];
  // i - j >= 0 (or >= 1 exclusive); reverse: i - j <= 0 (or <= -1).
  const int64_t offset = exclusive ? (reverse ? -1 : 1) : 0;
  const Value ones = imp.as_elem(triangle(imp, n, n, offset, !reverse), imp.in(0).elem);
  // Moved last, as a matrix with at least one row dim.
  std::vector<int64_t> perm(static_cast<size_t>(r));
  std::iota(perm.begin(), perm.end(), 0);
  perm.erase(perm.begin() + axis);
  perm.push_back(axis);
  const bool moved = axis != r - 1;
  if (moved) x = imp.op("permute", {x}, {{"perm", syms(perm)}}).name;
  if (r == 1) x = imp.reshape(x, {SymExpr(1), n});
  const int mr = std::max(r, 2);
  std::string y = imp.op("matmul", {x, imp.to_rank(ones.name, mr)}).name;
  if (r == 1) y = imp.reshape(y, {n});
  if (moved) {
    std::vector<int64_t> back(static_cast<size_t>(r));
    for (int i = 0; i < r; ++i) back[static_cast<size_t>(perm[static_cast<size_t>(i)])] = i;
    y = imp.op("permute", {y}, {{"perm", syms(back)}}).name;
  }
  imp.out(0, imp.value_of(y));
}

}  // namespace

// Trilu and CumSum.
void add_triangle_converters(std::vector<Converter>& table) {
  table.insert(table.end(), {
                                {"Trilu", 14, kMaxOpset, convert_trilu},
                                {"CumSum", 11, kMaxOpset, convert_cumsum},
                            });
}

}  // namespace weft::onnx_import
#endif
