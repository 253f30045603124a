// The operator table: every operator of every level is declared once here. The parser, printer,
// checker, interpreters, abstract expressions and code generators all dispatch from OpInfo.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/shape.h"
#include "ir/attrs.h"

namespace weft {

enum class OpKind : uint8_t {
  // Elementwise, one input.
  exp, sqr, sqrt, silu, gelu, relu,
  scale,  // x * factor (a rational constant)
  shift,  // x + offset (a rational constant)
  // Elementwise, two inputs, size-1 dims broadcast.
  add, sub, mul, div,
  // Contraction, batched over leading dims.
  matmul,
  // Reductions over one dim, to size 1 or to size `to` (strided groups: g, g + to, ...).
  sum, mean, max,
  // Data movement.
  reshape, concat, split, repeat,
  // Composites, expanded into primitives by expand_composites().
  rms_norm, softmax,
  // Block-graph structure: input iterator, for-loop accumulators, output saver.
  iter, accum_sum, accum_max, accum_concat, save,
  // Hierarchy: a graph-defined kernel (body = block graph), a thread graph (body = thread graph).
  kernel, thread,
};
inline constexpr int kNumOpKinds = static_cast<int>(OpKind::thread) + 1;

enum class OpClass : uint8_t {
  unary,        // elementwise, one input
  binary,       // elementwise, two inputs with broadcasting
  matmul,
  reduction,
  movement,     // reshape / concat / split / repeat
  composite,
  structure,    // iter / accum_* / save
  hierarchy,    // kernel / thread
};

// Levels where an operator may appear (bitmask).
enum LevelMask : uint8_t { kAtKernel = 1, kAtBlock = 2, kAtThread = 4 };

struct AttrSpec {
  const char* name;
  AttrKind kind;
  bool required;
  AttrValue default_value;  // used when !required and absent
};

struct TensorType {
  DType dtype = DType::f32;
  Shape shape;
  friend bool operator==(const TensorType&, const TensorType&) = default;
  std::string str() const;  // "f16[16, 4096]"
};

// What shape inference may need to know about the enclosing block graph.
struct InferContext {
  std::array<int64_t, 3> grid = {1, 1, 1};
  int64_t loop = 1;
};

// Infers output types; may normalize attributes (negative dims, defaults). Throws UserError
// (without a location; the caller adds it) with a sentence a person understands.
using InferFn = std::vector<TensorType> (*)(const std::vector<TensorType>& inputs, Attrs& attrs,
                                            const InferContext& ctx);

// Scalar semantics over the reals for elementwise operators (nullptr for others).
using RealUnaryFn = double (*)(double x, const Attrs& attrs);
using RealBinaryFn = double (*)(double a, double b);

struct OpInfo {
  OpKind kind;
  const char* name;
  OpClass op_class;
  int min_inputs;
  int max_inputs;            // -1: any number >= min_inputs
  uint8_t levels;            // LevelMask bits
  bool lax;                  // in the Lax fragment (multilinear, division, exp); else uninterpreted
  std::vector<AttrSpec> attrs;
  InferFn infer;
  RealUnaryFn real_unary;
  RealBinaryFn real_binary;
  const char* doc;           // one line, shown by `weft ops` and in docs
};

const OpInfo& op_info(OpKind kind);
std::optional<OpKind> op_by_name(std::string_view name);
const std::vector<OpInfo>& all_ops();

inline bool is_elementwise(OpKind k) {
  OpClass c = op_info(k).op_class;
  return c == OpClass::unary || c == OpClass::binary;
}
inline bool is_accumulator(OpKind k) {
  return k == OpKind::accum_sum || k == OpKind::accum_max || k == OpKind::accum_concat;
}

// Fills in defaults for absent optional attributes and rejects unknown or mistyped ones.
// Throws UserError (no location) naming the attribute.
void complete_attrs(const OpInfo& info, Attrs& attrs);

}  // namespace weft
