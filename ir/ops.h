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
#include "ir/ops.def"

namespace weft {

// Every operator, from the list of ir/ops.def (the values are stable: append new operators).
enum class OpKind : uint8_t {
#define WEFT_OP_ENUMERATOR(kind, op_class) kind,
  WEFT_OPERATORS(WEFT_OP_ENUMERATOR)
#undef WEFT_OP_ENUMERATOR
};
#define WEFT_OP_COUNT(kind, op_class) +1
inline constexpr int kNumOpKinds = 0 WEFT_OPERATORS(WEFT_OP_COUNT);
#undef WEFT_OP_COUNT

// The case labels of every operator of one class, generated from ir/ops.def. A switch over OpKind
// that handles a few kinds names the others by class, so it stays exhaustive (no `default:`) and a
// new operator needs only its line in ops.def: a kind in no list is an error in every such switch,
// a kind in two a duplicate case. WEFT_SELECT_<class> picks its own position among the nine.
// clang-format off
#define WEFT_SELECT_unary(u, b, mm, r, mv, c, s, h, m) u
#define WEFT_SELECT_binary(u, b, mm, r, mv, c, s, h, m) b
#define WEFT_SELECT_matmul(u, b, mm, r, mv, c, s, h, m) mm
#define WEFT_SELECT_reduction(u, b, mm, r, mv, c, s, h, m) r
#define WEFT_SELECT_movement(u, b, mm, r, mv, c, s, h, m) mv
#define WEFT_SELECT_composite(u, b, mm, r, mv, c, s, h, m) c
#define WEFT_SELECT_structure(u, b, mm, r, mv, c, s, h, m) s
#define WEFT_SELECT_hierarchy(u, b, mm, r, mv, c, s, h, m) h
#define WEFT_SELECT_model(u, b, mm, r, mv, c, s, h, m) m
#define WEFT_CASE_IF_UNARY(k, c) WEFT_SELECT_##c(case OpKind::k:, , , , , , , , )
#define WEFT_CASE_IF_BINARY(k, c) WEFT_SELECT_##c(, case OpKind::k:, , , , , , , )
#define WEFT_CASE_IF_MATMUL(k, c) WEFT_SELECT_##c(, , case OpKind::k:, , , , , , )
#define WEFT_CASE_IF_REDUCTION(k, c) WEFT_SELECT_##c(, , , case OpKind::k:, , , , , )
#define WEFT_CASE_IF_MOVEMENT(k, c) WEFT_SELECT_##c(, , , , case OpKind::k:, , , , )
#define WEFT_CASE_IF_COMPOSITE(k, c) WEFT_SELECT_##c(, , , , , case OpKind::k:, , , )
#define WEFT_CASE_IF_STRUCTURE(k, c) WEFT_SELECT_##c(, , , , , , case OpKind::k:, , )
#define WEFT_CASE_IF_HIERARCHY(k, c) WEFT_SELECT_##c(, , , , , , , case OpKind::k:, )
#define WEFT_CASE_IF_MODEL(k, c) WEFT_SELECT_##c(, , , , , , , , case OpKind::k:)
#define WEFT_CASES_UNARY WEFT_OPERATORS(WEFT_CASE_IF_UNARY)
#define WEFT_CASES_BINARY WEFT_OPERATORS(WEFT_CASE_IF_BINARY)
#define WEFT_CASES_MATMUL WEFT_OPERATORS(WEFT_CASE_IF_MATMUL)
#define WEFT_CASES_REDUCTION WEFT_OPERATORS(WEFT_CASE_IF_REDUCTION)
#define WEFT_CASES_MOVEMENT WEFT_OPERATORS(WEFT_CASE_IF_MOVEMENT)
#define WEFT_CASES_COMPOSITE WEFT_OPERATORS(WEFT_CASE_IF_COMPOSITE)
#define WEFT_CASES_STRUCTURE WEFT_OPERATORS(WEFT_CASE_IF_STRUCTURE)
#define WEFT_CASES_HIERARCHY WEFT_OPERATORS(WEFT_CASE_IF_HIERARCHY)
#define WEFT_CASES_MODEL WEFT_OPERATORS(WEFT_CASE_IF_MODEL)
// Every operator but the data-movement ones, for switches that implement those.
#define WEFT_CASES_NOT_MOVEMENT                                                          \
  WEFT_CASES_UNARY WEFT_CASES_BINARY WEFT_CASES_MATMUL WEFT_CASES_REDUCTION              \
  WEFT_CASES_COMPOSITE WEFT_CASES_STRUCTURE WEFT_CASES_HIERARCHY WEFT_CASES_MODEL
// clang-format on

// The operator's name in every text form: its kind as ops.def writes it.
constexpr const char* op_kind_name(OpKind kind) {
  constexpr const char* kNames[] = {
#define WEFT_OP_NAME(kind, op_class) #kind,
      WEFT_OPERATORS(WEFT_OP_NAME)
#undef WEFT_OP_NAME
  };
  return kNames[static_cast<size_t>(kind)];
}

// The rows ops.def reserves for a test (tests/scratch_operator_test.cpp): empty, and seen by no
// layer, unless the test fills them at start-up (fill_scratch_row).
constexpr bool is_scratch_slot(OpKind kind) {
  return kind == OpKind::scratch_unary || kind == OpKind::scratch_model;
}

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

// The model layer's form of the same rule (ir/dim_algebra.h): operand types whose dims are
// symbolic expressions, the call's attributes and checks in `dims`.
class SymbolicDims;
struct SymTensor;
struct SymResults;
using SymInferFn = SymResults (*)(SymbolicDims& dims, const std::vector<SymTensor>& inputs);

// An operator's shape rule, written once as a template over a dimension algebra
// (ir/shape_rules.h) and instantiated for concrete dims (µGraphs, and the model's CPU and device
// executors at run time) and symbolic ones (model functions).
struct ShapeRule {
  InferFn concrete = nullptr;
  SymInferFn symbolic = nullptr;  // null for rows no model function calls
};

// An elementwise operator's scalars: its operands x, y, z and its constants k, k2 (in code: {0},
// {1}, {4} and {2}, {3}).
struct ScalarArgs {
  double x = 0, y = 0, z = 0, k = 0, k2 = 0;
};
// Its value over the reals, computed in double.
using RealFn = double (*)(const ScalarArgs& s);
// Its constants from the call's attributes; by default its rational attributes in order.
struct ScalarConstants {
  double k = 0, k2 = 0;
};
using ConstantsFn = ScalarConstants (*)(const Attrs& attrs);

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

// An elementwise operator's scalar form in generated code: a pattern over {0}, {1} (operands) and
// {2} (the first constant: a µGraph row's rational attribute as a float literal); model-only rows
// may also use {3} (the second constant) and {4} (a third operand). One pattern for the CPU
// emitter's C++ (µGraph rows only) and one for CUDA: the CUDA emitter and its host emulation, and
// the model executor's device kernels (codegen/cuda/emit_model_kernels.h).
struct ScalarCode {
  const char* cpu = nullptr;
  const char* cuda = nullptr;
};

// The kernel family of the model executor's device library (codegen/cuda/device/model_kernels.cuh)
// that runs an operator of a model function (exec/device_vm.h dispatches on it).
enum class DeviceKernel : uint8_t {
  none,         // no device kernel: the host runs it, counted (composites expand before)
  elementwise,  // the row's CUDA scalar form with broadcasting (every row with `real`)
  movement,     // index mappings: reshape, permute, slices, expand, tile, pad, concat, split
  rows,         // one dim of [outer, n, inner] views: reductions, softmax, layer norm, global pools
  gather,       // rows picked by integer indices: embedding, gather
  matmul,
  position,  // position-dependent: rope, causal_mask
  generate,  // no operand: fill, range, dims_tensor
  window,    // sliding windows: conv, the pools, lrn
};

// One row per operator: every property a layer needs, read by the layers instead of switches
// over the kind. docs/architecture.md ("Adding an operator") says which layer reads which field.
struct OpInfo {
  // Form.
  OpKind kind;
  const char* name = nullptr;  // filled in from ops.def (a scratch row names itself)
  int min_inputs = 1;
  int max_inputs = 1;  // -1: any number >= min_inputs
  uint8_t levels = 0;  // LevelMask bits
  // In model functions, integer and int_list values may be symbolic (ir/sym_attrs.h).
  std::vector<AttrSpec> attrs = {};
  // The shape rule (ir/shape_rules.h); derived for elementwise rows left without one (same shape,
  // or broadcast operands). Model-only rows of other kinds have theirs in the model layer
  // (model_impl() in model/model_ops.h).
  ShapeRule shape = {};
  // Semantics. Elementwise operators, model-only ones included: the value over the reals (the
  // interpreter's and the model VM's) and their constants.
  RealFn real = nullptr;
  ConstantsFn constants = nullptr;
  // Elementwise µGraph operators in the Lax fragment: the formula (else uninterpreted).
  const char* lax_formula = nullptr;
  Symbolic symbolic = Symbolic::elementwise;
  // Composites: their expansion stays in the Lax fragment (OpTable tests hold it to the
  // expansion; the table cannot expand while it is being built).
  bool composite_lax = false;
  // Algebra the search's canonical forms use.
  bool commutative = false;
  uint8_t homogeneous = 0;               // bit i: op(.., c x_i, ..) = c op(..) for every constant c
  bool same_operands_redundant = false;  // op(x, x) is another operator or a constant
  // Graph rewrites (rewrite/): the rule generator enumerates graphs over the rows marked here.
  bool rewrite = false;
  // Fusion, code and cost.
  FusionPattern fusion = FusionPattern::opaque;
  ScalarCode code = {};  // elementwise operators
  CostClass cost = CostClass::data_movement;
  IssueSlots slots = {};
  // How the model executor runs it on a device; derived for elementwise rows.
  DeviceKernel device = DeviceKernel::none;
  const char* doc = "";  // one line, shown by `weft ops` and in docs

  // Filled in by the table from the above.
  OpClass op_class = OpClass::unary;  // class_of(kind)
  Formula formula = {};               // lax_formula parsed; empty when uninterpreted
  // In the Lax fragment the verifier models exactly (shown by `weft ops`): elementwise operators
  // with a formula; contractions, sums, means, data movement and graph-defined operators; the
  // composites that say so. Not: max (a symmetric function) and elementwise operators without a
  // formula (uninterpreted functions).
  bool lax = false;
  // The µGraph layers' shape rule: shape.concrete for rows with a µGraph level, else null.
  InferFn infer = nullptr;
};

// The rows of the table in kind order, without the empty reserved rows.
class OpRows {
 public:
  class iterator {
   public:
    iterator(const OpInfo* at, const OpInfo* end) : at_(at), end_(end) { skip(); }
    const OpInfo& operator*() const { return *at_; }
    const OpInfo* operator->() const { return at_; }
    iterator& operator++() {
      ++at_;
      skip();
      return *this;
    }
    friend bool operator==(const iterator& a, const iterator& b) { return a.at_ == b.at_; }

   private:
    void skip() {
      while (at_ != end_ && at_->levels == 0) ++at_;
    }
    const OpInfo* at_;
    const OpInfo* end_;
  };
  OpRows(const OpInfo* begin, const OpInfo* end) : begin_(begin), end_(end) {}
  iterator begin() const { return {begin_, end_}; }
  iterator end() const { return {end_, end_}; }

 private:
  const OpInfo* begin_;
  const OpInfo* end_;
};

// Every row, indexed by kind (reserved rows included).
const std::vector<OpInfo>& op_table();
OpRows all_ops();
// Inline: the search asks for rows in its innermost loop.
inline const OpInfo& op_info(OpKind kind) {
  static const OpInfo* const table = op_table().data();
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
// An operator computed element by element from its row's scalar forms: the elementwise µGraph
// operators and the model-only ones with `real` (where, pow, abs, log, cast, clip, ...).
inline bool has_scalar_forms(const OpInfo& info) {
  return info.real != nullptr;
}
inline bool is_accumulator(OpKind k) {
  return k == OpKind::accum_sum || k == OpKind::accum_max || k == OpKind::accum_concat;
}

// The operator's rational attribute (scale's factor, shift's offset, rms_norm's eps), if it has
// one: a µGraph row has at most one (model-only rows may have several: lrn, clip).
const AttrSpec* rational_attr(const OpInfo& info);

// The constants an elementwise operator's scalar forms read, from the call's attributes.
ScalarConstants scalar_constants(const OpInfo& info, const Attrs& attrs);
// The row's real semantics at one point (tests and slow paths; the interpreter takes the
// constants once per operator).
double real_value(const OpInfo& info, const Attrs& attrs, double x, double y = 0, double z = 0);

// Test support: fills a reserved row (OpKind::scratch_unary, scratch_model) with `row` before the
// table is first read, as if ops.def and ops.cpp had it from the start (its name is its own).
// An internal error once the table is built.
void fill_scratch_row(OpInfo row);

// Fills in defaults for absent optional attributes and rejects unknown or mistyped ones.
// Throws UserError (no location) naming the attribute.
void complete_attrs(const OpInfo& info, Attrs& attrs);

}  // namespace weft
