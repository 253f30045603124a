// The operator table: every operator of every level is declared once here, one row with all its
// properties. The parser, printer, checker, interpreters, verifier, abstract expressions, search,
// cost model and code generators all dispatch from OpInfo; so does the model layer, which attaches
// the model-only operators' implementations to their rows by kind (model/model_ops.h).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/shape.h"
#include "ir/attrs.h"

namespace weft {

// Every operator. The values are stable identifiers (search checkpoints store them, the
// finite-field verifier derives its random functions from them): a new operator is appended at the
// end, and its class list below says which family it belongs to.
// clang-format off
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
  // Elementwise, one input (added after the first table).
  sigmoid, tanh, neg,
  erf,
  // Model-level only (rows in ops_model.cpp): symbolic-size data movement, gathers,
  // position-dependent and ONNX operators that µGraphs never hold; a model runs them itself.
  permute, embedding, rope, causal_mask, softmax_safe, slice, where, layer_norm, gelu_tanh,
  attention,
  // ONNX's operators beyond the transformer set (issue 15).
  conv, max_pool, avg_pool, max_pool_indices, global_avg_pool, global_max_pool, lrn, pow, gather,
  slice_steps, expand, fill, dims_tensor, cast, clip, abs, reciprocal, log, range, tile, pad,
};
inline constexpr int kNumOpKinds = static_cast<int>(OpKind::pad) + 1;

// The case labels of every operator of one class. A switch over OpKind that handles a few kinds
// names the others by class, so it stays exhaustive (no `default:`) and a new operator needs only
// its class list: a kind in no list is an error in every such switch, a kind in two a duplicate
// case. The operator table takes each operator's OpClass from these lists.
#define WEFT_CASES_UNARY                                                                 \
  case OpKind::exp: case OpKind::sqr: case OpKind::sqrt: case OpKind::silu:              \
  case OpKind::gelu: case OpKind::relu: case OpKind::scale: case OpKind::shift:          \
  case OpKind::sigmoid: case OpKind::tanh: case OpKind::neg: case OpKind::erf:
#define WEFT_CASES_BINARY case OpKind::add: case OpKind::sub: case OpKind::mul: case OpKind::div:
#define WEFT_CASES_MATMUL case OpKind::matmul:
#define WEFT_CASES_REDUCTION case OpKind::sum: case OpKind::mean: case OpKind::max:
#define WEFT_CASES_MOVEMENT \
  case OpKind::reshape: case OpKind::concat: case OpKind::split: case OpKind::repeat:
#define WEFT_CASES_COMPOSITE case OpKind::rms_norm: case OpKind::softmax:
#define WEFT_CASES_STRUCTURE                                                             \
  case OpKind::iter: case OpKind::accum_sum: case OpKind::accum_max:                     \
  case OpKind::accum_concat: case OpKind::save:
#define WEFT_CASES_HIERARCHY case OpKind::kernel: case OpKind::thread:
#define WEFT_CASES_MODEL                                                                 \
  case OpKind::permute: case OpKind::embedding: case OpKind::rope:                       \
  case OpKind::causal_mask: case OpKind::softmax_safe: case OpKind::slice:               \
  case OpKind::where: case OpKind::layer_norm: case OpKind::gelu_tanh:                   \
  case OpKind::attention: case OpKind::conv: case OpKind::max_pool:                      \
  case OpKind::avg_pool: case OpKind::max_pool_indices: case OpKind::global_avg_pool:    \
  case OpKind::global_max_pool: case OpKind::lrn: case OpKind::pow: case OpKind::gather: \
  case OpKind::slice_steps: case OpKind::expand: case OpKind::fill:                      \
  case OpKind::dims_tensor: case OpKind::cast: case OpKind::clip: case OpKind::abs:      \
  case OpKind::reciprocal: case OpKind::log: case OpKind::range: case OpKind::tile:      \
  case OpKind::pad:
// Every operator but the data-movement ones, for switches that implement those.
#define WEFT_CASES_NOT_MOVEMENT                                                          \
  WEFT_CASES_UNARY WEFT_CASES_BINARY WEFT_CASES_MATMUL WEFT_CASES_REDUCTION              \
  WEFT_CASES_COMPOSITE WEFT_CASES_STRUCTURE WEFT_CASES_HIERARCHY WEFT_CASES_MODEL
// clang-format on

enum class OpClass : uint8_t {
  unary,   // elementwise, one input
  binary,  // elementwise, two inputs with broadcasting
  matmul,
  reduction,
  movement,  // reshape / concat / split / repeat
  composite,
  structure,  // iter / accum_* / save
  hierarchy,  // kernel / thread
  model,      // model-level only: never in a µGraph, so no µGraph layer meets one
};

// The class of an operator, from the case lists above.
constexpr OpClass class_of(OpKind kind) {
  switch (kind) {
    WEFT_CASES_UNARY return OpClass::unary;
    WEFT_CASES_BINARY return OpClass::binary;
    WEFT_CASES_MATMUL return OpClass::matmul;
    WEFT_CASES_REDUCTION return OpClass::reduction;
    WEFT_CASES_MOVEMENT return OpClass::movement;
    WEFT_CASES_COMPOSITE return OpClass::composite;
    WEFT_CASES_STRUCTURE return OpClass::structure;
    WEFT_CASES_HIERARCHY return OpClass::hierarchy;
    WEFT_CASES_MODEL return OpClass::model;
  }
  return OpClass::hierarchy;
}

// Levels where an operator may appear (bitmask). The rule: a row of class `model` appears only
// in model functions (kAtModel alone); every other row has at least one µGraph level, and also
// kAtModel exactly when a model function may call it (the kernel-level operators but `kernel`).
// Only the model layer looks at kAtModel: the µGraph layers (.weft parser, builder, validator,
// search, random programs, verifier) test their own level's bit, which a model-only row lacks.
enum LevelMask : uint8_t { kAtKernel = 1, kAtBlock = 2, kAtThread = 4, kAtModel = 8 };
inline constexpr uint8_t kAtUGraph = kAtKernel | kAtBlock | kAtThread;
// "kernel graphs, block graphs, model functions": where the levels say an operator may appear.
std::string levels_text(uint8_t levels);

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

// An elementwise operator's value over the reals, computed in double: `a` is the operand (the
// first one of a binary operator), `b` the second (0 for unary operators).
using RealFn = double (*)(double a, double b, const Attrs& attrs);

// An elementwise operator's exact semantics when it is in the Lax fragment: a formula over its
// operands that every symbolic layer evaluates in its own algebra (finite-field residues, abstract
// expressions, error-bound degrees) through evaluate_formula(). Written in a row as an
// s-expression over `x` (the operand), `y` (the second operand), the operator's rational
// attribute by name, rational literals, `(add F F)`, `(sub F F)`, `(mul F F)`, `(div F F)` and
// `(exp F)`, e.g. "(mul x factor)".
enum class FormulaOp : uint8_t { add, sub, mul, div, exp };
struct FormulaNode {
  // An operand: an earlier node (>= 0) or a leaf.
  static constexpr int8_t kX = -1, kY = -2, kAttribute = -3, kLiteral = -4;
  FormulaOp op = FormulaOp::add;
  int8_t a = kX, b = kX;            // b: unused by exp
  const char* attribute = nullptr;  // the rational attribute an operand kAttribute names
  Rational literal;                 // the value of an operand kLiteral (one per node)
};
struct Formula {
  static constexpr int kMaxNodes = 8;
  std::vector<FormulaNode> nodes;  // operations, operands first; the last one is the result
  bool empty() const { return nodes.empty(); }
  bool uses_exp() const;
};

// Evaluates `f` in `algebra`, which provides `Value` and x(), y(), attribute(name),
// literal(Rational), add, sub, mul, div (two Values) and exp (one). Formulas are evaluated for
// every tensor the search makes and every element the verifier computes: leaves sit in their
// users, so a one-operation formula is one step.
template <class Algebra>
[[gnu::always_inline]] inline typename Algebra::Value evaluate_formula(const Formula& f,
                                                                       Algebra& algebra) {
  using V = typename Algebra::Value;
  std::array<V, Formula::kMaxNodes> v;
  auto operand = [&](const FormulaNode& n, int8_t ref) -> V {
    if (ref >= 0) return v[static_cast<size_t>(ref)];
    if (ref == FormulaNode::kX) return algebra.x();
    if (ref == FormulaNode::kY) return algebra.y();
    if (ref == FormulaNode::kAttribute) return algebra.attribute(n.attribute);
    return algebra.literal(n.literal);
  };
  for (size_t i = 0; i < f.nodes.size(); ++i) {
    const FormulaNode& n = f.nodes[i];
    switch (n.op) {
      case FormulaOp::add:
        v[i] = algebra.add(operand(n, n.a), operand(n, n.b));
        break;
      case FormulaOp::sub:
        v[i] = algebra.sub(operand(n, n.a), operand(n, n.b));
        break;
      case FormulaOp::mul:
        v[i] = algebra.mul(operand(n, n.a), operand(n, n.b));
        break;
      case FormulaOp::div:
        v[i] = algebra.div(operand(n, n.a), operand(n, n.b));
        break;
      case FormulaOp::exp:
        v[i] = algebra.exp(operand(n, n.a));
        break;
    }
  }
  return std::move(v[f.nodes.size() - 1]);
}

// How the symbolic layers (the finite-field verifier through the interpreter, abstract
// expressions, error bounds) see an operator. `k` below is the number of elements combined per
// result element (combined_elements() in ir/graph.h).
enum class Symbolic : uint8_t {
  elementwise,  // per element: the Lax formula, or an uninterpreted function of the operand
  contraction,  // sum over k of products of the operands (matmul)
  sum,          // sum of k elements (sum, accum_sum)
  mean,         // sum of k elements times the constant 1/k
  max,          // max of k elements: a symmetric function outside the Lax fragment
  select,       // every result element is one operand element (reshape, split, repeat, iter,
                // save, accum_concat)
  join,         // the operands' elements side by side (concat)
  expansion,    // composite: the semantics of its expansion into primitives
  body,         // kernel, thread: the semantics of the body graph
  none,         // model-only operators: no symbolic layer sees them
};

// How a result element depends on operand elements, for a partitioner that fuses operators
// (the pattern kinds of TVM's operator fusion).
enum class FusionPattern : uint8_t {
  elementwise,              // element i from element i of the one operand
  broadcast,                // elementwise over operands whose size-1 dims broadcast
  injective,                // each result element is one operand element (data movement)
  reduction,                // each result element combines a group of operand elements
  out_elementwise_fusable,  // a contraction: elementwise consumers fuse into its epilogue
  opaque,                   // nothing fuses across it
};
// "elementwise", "broadcast", "injective", "reduction", "out-elementwise-fusable", "opaque".
const char* fusion_pattern_name(FusionPattern pattern);

// How the cost model counts an operator's arithmetic (cost/op_work.h).
enum class CostClass : uint8_t {
  per_result_element,   // `slots` for every result element (elementwise)
  per_operand_element,  // `slots` for every element of the first operand (reductions,
                        // accumulators, composites)
  contraction,          // priced by the matmul model (tensor cores or FMAs)
  data_movement,        // no arithmetic: memory traffic only
  body,                 // priced through its body graph
};
// Issue slots per counted element: instructions on the FP32 pipe and on the special-function
// unit (exp2, reciprocal, sqrt), which the cost model weighs by the FP32/SFU throughput ratio.
struct IssueSlots {
  int fp32 = 0;
  int sfu = 0;
};

// An elementwise operator's scalar form in generated code: a pattern with {0}, {1} for the
// operands and {2} for the operator's rational attribute as a float literal, one for the CPU
// emitter's C++ and one for CUDA (and its host emulation).
struct ScalarCode {
  const char* cpu = nullptr;
  const char* cuda = nullptr;
};

// One row per operator: every property a layer needs, read by the layers instead of switches
// over the kind. docs/architecture.md ("Adding an operator") says which layer reads which field.
struct OpInfo {
  // Form.
  OpKind kind;
  const char* name;
  int min_inputs;
  int max_inputs;  // -1: any number >= min_inputs
  uint8_t levels;  // LevelMask bits
  // In model functions, integer and int_list values may be symbolic (model/deduce.h).
  std::vector<AttrSpec> attrs = {};
  // µGraph shape rule; null for model-only rows, whose symbolic rule, CPU semantics and expansion
  // the model layer attaches by kind (model_impl() in model/model_ops.h).
  InferFn infer = nullptr;
  // Semantics.
  RealFn real = nullptr;  // elementwise operators
  // Elementwise operators in the Lax fragment: the formula (else uninterpreted).
  const char* lax_formula = nullptr;
  Symbolic symbolic = Symbolic::elementwise;
  // Composites: their expansion stays in the Lax fragment (OpTable tests hold it to the
  // expansion; the table cannot expand while it is being built).
  bool composite_lax = false;
  // Algebra the search's canonical forms use.
  bool commutative = false;
  uint8_t homogeneous = 0;               // bit i: op(.., c x_i, ..) = c op(..) for every constant c
  bool same_operands_redundant = false;  // op(x, x) is another operator or a constant
  // Fusion, code and cost.
  FusionPattern fusion = FusionPattern::opaque;
  ScalarCode code = {};  // elementwise operators
  CostClass cost = CostClass::data_movement;
  IssueSlots slots = {};
  const char* doc = "";  // one line, shown by `weft ops` and in docs

  // Filled in by the table from the above.
  OpClass op_class = OpClass::unary;  // class_of(kind)
  Formula formula = {};               // lax_formula parsed; empty when uninterpreted
  // In the Lax fragment the verifier models exactly (shown by `weft ops`): elementwise operators
  // with a formula; contractions, sums, means, data movement and graph-defined operators; the
  // composites that say so. Not: max (a symmetric function) and elementwise operators without a
  // formula (uninterpreted functions).
  bool lax = false;
};

const std::vector<OpInfo>& all_ops();
// Inline: the search asks for rows in its innermost loop.
inline const OpInfo& op_info(OpKind kind) {
  static const OpInfo* const table = all_ops().data();
  return table[static_cast<size_t>(kind)];
}
std::optional<OpKind> op_by_name(std::string_view name);

inline bool is_elementwise(OpKind k) {
  OpClass c = class_of(k);
  return c == OpClass::unary || c == OpClass::binary;
}
// Model-only operators: a model runs them (model/model_ops.h), no µGraph holds them.
inline bool is_model_only(OpKind k) {
  return class_of(k) == OpClass::model;
}
inline bool is_accumulator(OpKind k) {
  return k == OpKind::accum_sum || k == OpKind::accum_max || k == OpKind::accum_concat;
}

// The operator's rational attribute (scale's factor, shift's offset, rms_norm's eps), if it has
// one: a µGraph row has at most one (model-only rows may have several: lrn, clip).
const AttrSpec* rational_attr(const OpInfo& info);

// Fills in defaults for absent optional attributes and rejects unknown or mistyped ones.
// Throws UserError (no location) naming the attribute.
void complete_attrs(const OpInfo& info, Attrs& attrs);

}  // namespace weft
