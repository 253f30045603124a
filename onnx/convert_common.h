// The helpers the ONNX converter files (onnx/convert_*.cpp) share, and the rows each contributes
// to the converter table (onnx/converters.cpp).
#pragma once
#ifdef WEFT_HAVE_ONNX
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "onnx/importer.h"

namespace weft::onnx_import {

using I = Importer;

// The rows of the converter table, by family.
void add_math_converters(std::vector<Converter>& table);
void add_shape_converters(std::vector<Converter>& table);
void add_conv_converters(std::vector<Converter>& table);
void add_logic_converters(std::vector<Converter>& table);
void add_triangle_converters(std::vector<Converter>& table);
void add_einsum_converters(std::vector<Converter>& table);

// d[from] * ... * d[to - 1].
SymExpr product(const std::vector<SymExpr>& d, size_t from, size_t to);
std::vector<SymExpr> syms(const std::vector<int64_t>& v);
MAttrs dim_attr(int64_t d);
// `d` as an exact rational, or a failure naming `what`.
Rational rational_attr(const I& imp, double d, const char* what);

// Folded constants stay small: a larger one is a model weft does not fold (and no allocation
// of a hostile size happens at import).
void check_foldable(const I& imp, const Shape& shape, int64_t limit = int64_t{1} << 26);
// numpy broadcasting of two constants through `f`.
Tensor<double> broadcast_apply(const I& imp, const Tensor<double>& a, const Tensor<double>& b,
                               double (*f)(double, double));
// `v` (a constant or dims value) with a new shape of the same element count.
Value refold(const I& imp, const Value& v, const std::vector<int64_t>& shape);
std::vector<int64_t> const_shape_of(const I& imp, const std::vector<SymExpr>& d);
// The shape of a non-run-time value.
std::vector<int64_t> folded_shape(const Value& v);
// Reshape for any kind of value: folded for constants and shape vectors.
Value reshape_value(I& imp, const Value& v, const std::vector<SymExpr>& shape);

// The node's one input through the table's unary operator `op`.
void unary(I& imp, const char* op);

enum class Arith : uint8_t { add, sub, mul, div, pow };
// Numpy broadcasting aligns ranks by prepending size-1 dims (on a constant's data).
Value with_rank(Value v, int r);
// The rank numpy broadcasting gives operands, run-time or constant.
int broadcast_rank(I& imp, std::initializer_list<const Value*> vs);
// a (k) b with numpy broadcasting: folded when both are known, scale/shift for a run-time
// operand and a constant scalar, else the table's operator on operands of equal rank.
Value arith(I& imp, Arith k, const Value& a, const Value& b);

}  // namespace weft::onnx_import
#endif
