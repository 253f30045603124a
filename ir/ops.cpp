// The operator table: one row per operator with all its properties (the model-only rows are in
// ops_model.cpp, the shape rules in shape_rules.cpp), and the checks that complete each row.
#include "ir/ops.h"

#include <fmt/format.h>

#include <cmath>
#include <map>

#include "core/error.h"
#include "ir/shape_rules.h"

namespace weft {

std::string TensorType::str() const {
  return fmt::format("{}{}", dtype_name(dtype), shape_str(shape));
}

// The model-only rows, in kind order (ops_model.cpp).
std::vector<OpInfo> model_op_rows();

namespace {

[[noreturn]] void fail(const std::string& message) {
  throw UserError(message);
}

// Reads a row's formula text (ops.h); a mistake in it is a bug in the table.
class FormulaReader {
 public:
  FormulaReader(const char* text, const std::vector<AttrSpec>& attrs) : s_(text), attrs_(attrs) {}

  Formula read_all() {
    skip();
    WEFT_CHECK(pos_ < s_.size() && s_[pos_] == '(', "formula '{}' applies no operation", s_);
    read_operation();
    skip();
    WEFT_CHECK(pos_ == s_.size(), "formula '{}': text after the end", s_);
    WEFT_CHECK(f_.nodes.size() <= Formula::kMaxNodes, "formula '{}' is too long", s_);
    return std::move(f_);
  }

 private:
  void skip() {
    while (pos_ < s_.size() && s_[pos_] == ' ') ++pos_;
  }
  std::string_view word() {
    skip();
    size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] != ' ' && s_[pos_] != '(' && s_[pos_] != ')') ++pos_;
    return s_.substr(start, pos_ - start);
  }
  // "(op F F)" or "(exp F)", the '(' next; returns the node's index.
  int8_t read_operation() {
    ++pos_;
    static constexpr std::pair<const char*, FormulaOp> kHeads[] = {{"add", FormulaOp::add},
                                                                   {"sub", FormulaOp::sub},
                                                                   {"mul", FormulaOp::mul},
                                                                   {"div", FormulaOp::div},
                                                                   {"exp", FormulaOp::exp}};
    std::string_view head = word();
    FormulaNode n;
    bool known = false;
    for (const auto& [name, op] : kHeads)
      if (head == name) n.op = op, known = true;
    WEFT_CHECK(known, "formula '{}': unknown function '{}'", s_, head);
    n.a = read_operand(n);
    if (n.op != FormulaOp::exp) n.b = read_operand(n);
    skip();
    WEFT_CHECK(pos_ < s_.size() && s_[pos_] == ')', "formula '{}': expected ')'", s_);
    ++pos_;
    f_.nodes.push_back(n);
    return static_cast<int8_t>(f_.nodes.size() - 1);
  }
  int8_t read_operand(FormulaNode& user) {
    skip();
    WEFT_CHECK(pos_ < s_.size(), "formula '{}' ends early", s_);
    if (s_[pos_] == '(') return read_operation();
    std::string_view w = word();
    if (w == "x") return FormulaNode::kX;
    if (w == "y") return FormulaNode::kY;
    for (const AttrSpec& a : attrs_)
      if (w == a.name && a.kind == AttrKind::rational) {
        user.attribute = a.name;
        return FormulaNode::kAttribute;
      }
    std::optional<Rational> r = Rational::parse(w);
    WEFT_CHECK(r.has_value(), "formula '{}': '{}' is not x, y, a rational attribute or a number",
               s_, w);
    WEFT_CHECK(user.a != FormulaNode::kLiteral, "formula '{}': two numbers in one operation", s_);
    user.literal = *r;
    return FormulaNode::kLiteral;
  }

  std::string_view s_;
  const std::vector<AttrSpec>& attrs_;
  size_t pos_ = 0;
  Formula f_;
};

double gelu(const ScalarArgs& s) {
  return 0.5 * s.x * (1.0 + std::erf(s.x / std::sqrt(2.0)));
}

// Kernel-level rows but `kernel` are model-level too: a model function calls them.
constexpr uint8_t kAll = kAtKernel | kAtBlock | kAtThread | kAtModel;
constexpr uint8_t kKB = kAtKernel | kAtBlock | kAtModel;
constexpr uint8_t kK = kAtKernel | kAtModel;

// A model-only row: the model layer reads its form (name, arity, attributes) and documentation;
// its fusion pattern and cost class say what it does, though no fuser or cost model meets it. An
// elementwise one carries its shape rule, real semantics and CUDA form (no µGraph semantics: no
// formula, no C++ form); the others have theirs in the model layer (model/model_ops.h).
void check_model_row(const OpInfo& op) {
  WEFT_CHECK(op.levels == kAtModel, "model-only '{}' must have the model level alone", op.name);
  // A range (fused_conv's optional residual) only for the ones the model layer implements.
  WEFT_CHECK(op.min_inputs == op.max_inputs || (!op.real && op.min_inputs < op.max_inputs),
             "model-only '{}' takes a fixed number of operands", op.name);
  WEFT_CHECK(!op.lax_formula && !op.code.cpu && op.symbolic == Symbolic::none && !op.commutative &&
                 op.homogeneous == 0 && !op.same_operands_redundant,
             "model-only '{}' has µGraph semantics", op.name);
  WEFT_CHECK((op.real != nullptr) == (op.code.cuda != nullptr),
             "model-only '{}': real semantics and a CUDA form come together", op.name);
  WEFT_CHECK(op.real || (!op.shape.concrete && !op.shape.symbolic && !op.constants),
             "model-only '{}' is not elementwise: the model layer has its shape rule", op.name);
  WEFT_CHECK(op.min_inputs <= 3, "model-only '{}': an elementwise form takes up to 3 operands",
             op.name);
  WEFT_CHECK(op.fusion == FusionPattern::injective || op.fusion == FusionPattern::opaque,
             "model-only '{}' is injective or opaque", op.name);
  WEFT_CHECK((op.fusion == FusionPattern::injective) == (op.cost == CostClass::data_movement),
             "model-only '{}': the injective ones and only they move data", op.name);
  WEFT_CHECK(op.cost == CostClass::data_movement || op.cost == CostClass::per_operand_element,
             "model-only '{}' is priced per operand element or as data movement", op.name);
}

// What a µGraph row's scalar code, formula and algebra must satisfy, and its Lax membership.
void complete_micro_graph_row(OpInfo& op) {
  WEFT_CHECK(op.levels & kAtUGraph, "'{}' has no µGraph level", op.name);
  WEFT_CHECK(!(op.levels & kAtModel) || ((op.levels & kAtKernel) && op.kind != OpKind::kernel),
             "'{}': a model function calls kernel-level operators only (not kernel)", op.name);
  WEFT_CHECK(op.symbolic != Symbolic::none, "'{}' is a µGraph operator without semantics", op.name);
  WEFT_CHECK(op.shape.concrete || op.op_class == OpClass::hierarchy, "'{}' has no shape rule",
             op.name);
  WEFT_CHECK(!(op.levels & kAtModel) || op.shape.symbolic, "'{}' has no symbolic shape rule",
             op.name);
  const bool elementwise = is_elementwise(op.kind);
  int rational_attrs = 0;
  for (const AttrSpec& a : op.attrs) rational_attrs += a.kind == AttrKind::rational;
  WEFT_CHECK(rational_attrs <= 1, "'{}' has more than one rational attribute", op.name);
  WEFT_CHECK(op.max_inputs < 0 || op.homogeneous < (1u << op.max_inputs),
             "'{}' is homogeneous in an operand it does not have", op.name);
  WEFT_CHECK(elementwise == (op.symbolic == Symbolic::elementwise),
             "'{}': elementwise operators and only they have elementwise symbolic semantics",
             op.name);
  WEFT_CHECK(op.symbolic == Symbolic::expansion || !op.composite_lax,
             "'{}' is not a composite but declares composite_lax", op.name);
  switch (op.symbolic) {
    case Symbolic::elementwise:
      break;  // below, from its formula
    case Symbolic::max:
      op.lax = false;
      break;
    case Symbolic::expansion:
      op.lax = op.composite_lax;
      break;
    case Symbolic::contraction:
    case Symbolic::sum:
    case Symbolic::mean:
    case Symbolic::select:
    case Symbolic::join:
    case Symbolic::body:
      op.lax = true;
      break;
    case Symbolic::none:
      WEFT_FAIL("'{}': µGraph rows have semantics (checked above)", op.name);
  }
  if (!elementwise) {
    WEFT_CHECK(!op.real && !op.lax_formula && !op.code.cpu && !op.code.cuda && !op.constants,
               "'{}' is not elementwise but has scalar semantics or code", op.name);
    return;
  }
  WEFT_CHECK(op.real && op.code.cpu && op.code.cuda, "'{}' lacks real semantics or code", op.name);
  // The µGraph emitters give a pattern its operands and one constant.
  for (const char* code : {op.code.cpu, op.code.cuda})
    WEFT_CHECK(std::string_view(code).find("{3}") == std::string_view::npos &&
                   std::string_view(code).find("{4}") == std::string_view::npos,
               "'{}': a µGraph row's code uses {{0}}, {{1}} and {{2}} only", op.name);
  if (op.lax_formula) op.formula = FormulaReader(op.lax_formula, op.attrs).read_all();
  op.lax = !op.formula.empty();
  // The verifier's uninterpreted functions take one argument.
  WEFT_CHECK(op.max_inputs == 1 || op.lax, "binary operator '{}' needs a Lax formula", op.name);
  for (const FormulaNode& n : op.formula.nodes)
    WEFT_CHECK(op.max_inputs == 2 || (n.a != FormulaNode::kY && n.b != FormulaNode::kY),
               "unary operator '{}' has a formula over y", op.name);
}

// Fills in what a row leaves to the table (its name, class, the shape rule and device kernel of
// an elementwise row, the µGraph layers' rule) and checks what the layers rely on.
void complete_row(OpInfo& op) {
  if (!op.name) op.name = op_kind_name(op.kind);
  op.op_class = class_of(op.kind);
  if (op.levels == 0) {
    WEFT_CHECK(is_scratch_slot(op.kind), "'{}' appears nowhere", op.name);
    return;  // an empty reserved row
  }
  if (op.real) {
    if (!op.shape.concrete)
      op.shape = op.op_class == OpClass::unary    ? shape_rules::same_shape
                 : op.op_class == OpClass::binary ? shape_rules::broadcast
                                                  : shape_rules::elementwise;
    WEFT_CHECK(op.device == DeviceKernel::none, "'{}': elementwise rows run as elementwise",
               op.name);
    op.device = DeviceKernel::elementwise;
  }
  if (op.op_class == OpClass::model)
    check_model_row(op);
  else
    complete_micro_graph_row(op);
  op.infer = (op.levels & kAtUGraph) ? op.shape.concrete : nullptr;
}

// The rows a test filled before the table was built (fill_scratch_row), by kind.
struct ScratchRows {
  std::map<OpKind, OpInfo> rows;
  bool table_built = false;
};
ScratchRows& scratch_rows() {
  static ScratchRows s;
  return s;
}

// The elementwise µGraph rows of the first table (exp .. div).
std::vector<OpInfo> first_elementwise_rows() {
  using K = OpKind;
  using F = FusionPattern;
  using Cost = CostClass;
  // clang-format off
  return {
    {.kind = K::exp, .min_inputs = 1, .max_inputs = 1, .levels = kAll,
     .real = [](const ScalarArgs& s) { return std::exp(s.x); },
     .lax_formula = "(exp x)", .rewrite = true, .fusion = F::elementwise,
     .code = {"std::exp({0})", "expf({0})"}, .cost = Cost::per_result_element,
     .slots = {.fp32 = 1, .sfu = 1},  // ex2 on the SFU after a scale by log2(e)
     .doc = "e^x"},
    {.kind = K::sqr, .min_inputs = 1, .max_inputs = 1, .levels = kAll,
     .real = [](const ScalarArgs& s) { return s.x * s.x; },
     .lax_formula = "(mul x x)", .fusion = F::elementwise,
     .code = {"({0} * {0})", "({0} * {0})"}, .cost = Cost::per_result_element,
     .slots = {.fp32 = 1}, .doc = "x^2"},
    {.kind = K::sqrt, .min_inputs = 1, .max_inputs = 1, .levels = kAll,
     .real = [](const ScalarArgs& s) { return std::sqrt(s.x); },
     .fusion = F::elementwise, .code = {"std::sqrt({0})", "sqrtf({0})"},
     .cost = Cost::per_result_element, .slots = {.sfu = 1},  // MUFU.SQRT
     .doc = "square root"},
    {.kind = K::silu, .min_inputs = 1, .max_inputs = 1, .levels = kAll,
     .real = [](const ScalarArgs& s) { return s.x / (1.0 + std::exp(-s.x)); },
     .fusion = F::elementwise, .code = {"weft_silu({0})", "weft_silu({0})"},
     .cost = Cost::per_result_element,
     .slots = {.fp32 = 3, .sfu = 2},  // exp(-x), 1 + ., reciprocal, x * .
     .doc = "x * sigmoid(x)"},
    {.kind = K::gelu, .min_inputs = 1, .max_inputs = 1, .levels = kAll,
     .real = gelu, .fusion = F::elementwise,
     .code = {"weft_gelu({0})", "weft_gelu({0})"}, .cost = Cost::per_result_element,
     .slots = {.fp32 = 24},  // erf by a ~20-term polynomial, 3 more ops
     .doc = "0.5 x (1 + erf(x / sqrt 2)) (exact, not the tanh approximation)"},
    {.kind = K::relu, .min_inputs = 1, .max_inputs = 1, .levels = kAll,
     .real = [](const ScalarArgs& s) { return s.x > 0 ? s.x : 0.0; },
     .rewrite = true, .fusion = F::elementwise, .code = {"std::max({0}, 0.0f)", "fmaxf({0}, 0.0f)"},
     .cost = Cost::per_result_element, .slots = {.fp32 = 1}, .doc = "max(x, 0)"},
    {.kind = K::scale, .min_inputs = 1, .max_inputs = 1, .levels = kAll,
     .attrs = {{"factor", AttrKind::rational, true, Rational(1)}},
     .real = [](const ScalarArgs& s) { return s.x * s.k; },
     .lax_formula = "(mul x factor)", .homogeneous = 0b1, .rewrite = true, .fusion = F::elementwise,
     .code = {"({0} * {2})", "({0} * {2})"}, .cost = Cost::per_result_element,
     .slots = {.fp32 = 1}, .doc = "x * factor, factor a rational constant"},
    {.kind = K::shift, .min_inputs = 1, .max_inputs = 1, .levels = kAll,
     .attrs = {{"offset", AttrKind::rational, true, Rational(0)}},
     .real = [](const ScalarArgs& s) { return s.x + s.k; },
     .lax_formula = "(add x offset)", .fusion = F::elementwise,
     .code = {"({0} + {2})", "({0} + {2})"}, .cost = Cost::per_result_element,
     .slots = {.fp32 = 1}, .doc = "x + offset, offset a rational constant"},
    {.kind = K::add, .min_inputs = 2, .max_inputs = 2, .levels = kAll,
     .real = [](const ScalarArgs& s) { return s.x + s.y; },
     .lax_formula = "(add x y)", .commutative = true, .rewrite = true, .fusion = F::broadcast,
     .code = {"({0} + {1})", "({0} + {1})"}, .cost = Cost::per_result_element,
     .slots = {.fp32 = 1}, .doc = "a + b, size-1 dims broadcast"},
    {.kind = K::sub, .min_inputs = 2, .max_inputs = 2, .levels = kAll,
     .real = [](const ScalarArgs& s) { return s.x - s.y; },
     .lax_formula = "(sub x y)", .same_operands_redundant = true,  // 0
     .fusion = F::broadcast, .code = {"({0} - {1})", "({0} - {1})"},
     .cost = Cost::per_result_element, .slots = {.fp32 = 1},
     .doc = "a - b, size-1 dims broadcast"},
    {.kind = K::mul, .min_inputs = 2, .max_inputs = 2, .levels = kAll,
     .real = [](const ScalarArgs& s) { return s.x * s.y; },
     .lax_formula = "(mul x y)", .commutative = true, .homogeneous = 0b11,
     .same_operands_redundant = true,  // sqr
     .rewrite = true, .fusion = F::broadcast, .code = {"({0} * {1})", "({0} * {1})"},
     .cost = Cost::per_result_element, .slots = {.fp32 = 1},
     .doc = "a * b, size-1 dims broadcast"},
    {.kind = K::div, .min_inputs = 2, .max_inputs = 2, .levels = kAll,
     .real = [](const ScalarArgs& s) { return s.x / s.y; },
     .lax_formula = "(div x y)", .homogeneous = 0b1,
     .same_operands_redundant = true,  // 1
     .fusion = F::broadcast, .code = {"({0} / {1})", "({0} / {1})"},
     .cost = Cost::per_result_element,
     .slots = {.fp32 = 1, .sfu = 1},  // reciprocal on the SFU, then a multiply
     .doc = "a / b, size-1 dims broadcast"},
  };
  // clang-format on
}

// Contraction, reductions, data movement, composites, block-graph structure and hierarchy.
std::vector<OpInfo> structural_rows() {
  using K = OpKind;
  using S = Symbolic;
  using F = FusionPattern;
  using Cost = CostClass;
  using D = DeviceKernel;
  const AttrSpec dim{"dim", AttrKind::integer, true, int64_t{0}};
  const AttrSpec dim_last{"dim", AttrKind::integer, false, int64_t{-1}};
  const AttrSpec to{"to", AttrKind::integer, false, int64_t{1}};
  // clang-format off
  return {
    {.kind = K::matmul, .min_inputs = 2, .max_inputs = 2, .levels = kKB,
     .shape = shape_rules::matmul, .symbolic = S::contraction, .homogeneous = 0b11,
     .rewrite = true, .fusion = F::out_elementwise_fusable, .cost = Cost::contraction,
     .device = D::matmul,
     .doc = "[..., m, k] x [..., k, n] -> [..., m, n], size-1 batch dims broadcast"},
    {.kind = K::sum, .min_inputs = 1, .max_inputs = 1, .levels = kKB,
     .attrs = {dim, to}, .shape = shape_rules::reduction, .symbolic = S::sum,
     .homogeneous = 0b1, .rewrite = true, .fusion = F::reduction, .cost = Cost::per_operand_element,
     .slots = {.fp32 = 1},
     .device = D::rows,
     .doc = "sum over dim, to size `to`: element g sums elements g, g + to, g + 2 to, ... (per-block tiles laid side by side)"},
    {.kind = K::mean, .min_inputs = 1, .max_inputs = 1, .levels = kKB,
     .attrs = {dim, to}, .shape = shape_rules::reduction, .symbolic = S::mean,
     .homogeneous = 0b1, .fusion = F::reduction, .cost = Cost::per_operand_element,
     .slots = {.fp32 = 1},
     .device = D::rows,
     .doc = "mean over dim, to size `to`: element g averages elements g, g + to, g + 2 to, ..."},
    {.kind = K::max, .min_inputs = 1, .max_inputs = 1, .levels = kKB,
     .attrs = {dim, to}, .shape = shape_rules::reduction, .symbolic = S::max, .fusion = F::reduction,
     .cost = Cost::per_operand_element, .slots = {.fp32 = 1},
     .device = D::rows,
     .doc = "maximum over dim, to size `to`: element g is the max of elements g, g + to, g + 2 to, ..."},
    {.kind = K::reshape, .min_inputs = 1, .max_inputs = 1, .levels = kKB,
     .attrs = {{"shape", AttrKind::int_list, true, std::vector<int64_t>{}}},
     .shape = shape_rules::reshape, .symbolic = S::select, .homogeneous = 0b1,
     .fusion = F::injective, .device = D::movement,
     .doc = "same elements in row-major order, new shape"},
    {.kind = K::concat, .min_inputs = 2, .max_inputs = -1, .levels = kKB,
     .attrs = {dim}, .shape = shape_rules::concat, .symbolic = S::join,
     .rewrite = true, .fusion = F::injective, .device = D::movement,
     .doc = "operands joined along dim"},
    {.kind = K::split, .min_inputs = 1, .max_inputs = 1, .levels = kKB,
     .attrs = {dim, {"parts", AttrKind::integer, true, int64_t{2}}}, .shape = shape_rules::split,
     .symbolic = S::select, .homogeneous = 0b1, .rewrite = true, .fusion = F::injective,
     .device = D::movement,
     .doc = "cut along dim into `parts` equal consecutive pieces (one result each)"},
    {.kind = K::repeat, .min_inputs = 1, .max_inputs = 1, .levels = kKB,
     .attrs = {dim, {"times", AttrKind::integer, true, int64_t{1}}}, .shape = shape_rules::repeat,
     .symbolic = S::select, .homogeneous = 0b1, .fusion = F::injective,
     .device = D::movement,
     .doc = "the whole tensor tiled `times` times along dim (like concat of copies)"},
    {.kind = K::rms_norm, .min_inputs = 1, .max_inputs = 1,
     .levels = kK, .attrs = {dim_last, {"eps", AttrKind::rational, false, Rational(0)}},
     .shape = shape_rules::normalizing, .symbolic = S::expansion, .homogeneous = 0,
     .fusion = F::opaque, .cost = Cost::per_operand_element,
     .slots = {.fp32 = 3},  // square, sum, multiply by the row's reciprocal root (once per row)
     .device = D::rows, .doc = "x / sqrt(mean(x^2, dim) + eps)"},
    {.kind = K::softmax, .min_inputs = 1, .max_inputs = 1,
     .levels = kK, .attrs = {dim_last}, .shape = shape_rules::normalizing,
     .symbolic = S::expansion, .composite_lax = true, .fusion = F::opaque,
     .cost = Cost::per_operand_element,
     .slots = {.fp32 = 3, .sfu = 1},  // exp, sum, multiply by the row's reciprocal sum
     .device = D::rows, .doc = "exp(x) / sum(exp(x), dim) (no max subtraction: stays in the Lax fragment)"},
    {.kind = K::iter, .min_inputs = 1, .max_inputs = 1, .levels = kAtBlock,
     .attrs = {{"imap", AttrKind::dim_map, false, std::vector<int64_t>{-1, -1, -1}},
               {"fmap", AttrKind::opt_dim, false, int64_t{-1}}},
     .shape = shape_rules::iter, .symbolic = S::select, .homogeneous = 0b1,
     .fusion = F::injective,
     .doc = "input iterator: the block's slice (imap) and the iteration's chunk (fmap) of a kernel input"},
    {.kind = K::accum_sum, .min_inputs = 1, .max_inputs = 1,
     .levels = kAtBlock, .shape = shape_rules::same_shape, .symbolic = S::sum,
     .homogeneous = 0b1, .fusion = F::reduction, .cost = Cost::per_operand_element,
     .slots = {.fp32 = 1}, .doc = "for-loop accumulator: sum over iterations"},
    {.kind = K::accum_max, .min_inputs = 1, .max_inputs = 1,
     .levels = kAtBlock, .shape = shape_rules::same_shape, .symbolic = S::max, .fusion = F::reduction,
     .cost = Cost::per_operand_element, .slots = {.fp32 = 1},
     .doc = "for-loop accumulator: elementwise maximum over iterations"},
    {.kind = K::accum_concat, .min_inputs = 1, .max_inputs = 1,
     .levels = kAtBlock, .attrs = {dim}, .shape = shape_rules::accum_concat, .symbolic = S::select,
     .homogeneous = 0b1, .fusion = F::injective,
     .doc = "for-loop accumulator: iterations' tiles concatenated along dim"},
    {.kind = K::save, .min_inputs = 1, .max_inputs = 1, .levels = kAtBlock,
     .attrs = {{"omap", AttrKind::dim_map, false, std::vector<int64_t>{-1, -1, -1}}},
     .shape = shape_rules::save, .symbolic = S::select, .homogeneous = 0b1,
     .fusion = F::injective,
     .doc = "output saver: blocks' tiles placed along the data dims of omap"},
    {.kind = K::kernel, .min_inputs = 1, .max_inputs = -1,
     .levels = kAtKernel, .symbolic = S::body, .fusion = F::opaque,
     .cost = Cost::body, .doc = "graph-defined kernel operator; its body is a block graph"},
    {.kind = K::thread, .min_inputs = 1, .max_inputs = -1,
     .levels = kAtBlock, .symbolic = S::body, .fusion = F::opaque,
     .cost = Cost::body,
     .doc = "fused elementwise chain kept in registers; its body is a thread graph"},
  };
  // clang-format on
}

// The elementwise µGraph rows added after the first table (sigmoid .. erf).
std::vector<OpInfo> later_unary_rows() {
  using K = OpKind;
  using F = FusionPattern;
  using Cost = CostClass;
  // clang-format off
  return {
    {.kind = K::sigmoid, .min_inputs = 1, .max_inputs = 1, .levels = kAll,
     .real = [](const ScalarArgs& s) { return 1.0 / (1.0 + std::exp(-s.x)); },
     .fusion = F::elementwise,
     .code = {"(1.0f / (1.0f + std::exp(-{0})))", "(1.0f / (1.0f + expf(-{0})))"},
     .cost = Cost::per_result_element,
     .slots = {.fp32 = 2, .sfu = 2},  // exp(-x), 1 + ., reciprocal
     .doc = "1 / (1 + e^-x)"},
    {.kind = K::tanh, .min_inputs = 1, .max_inputs = 1, .levels = kAll,
     .real = [](const ScalarArgs& s) { return std::tanh(s.x); },
     .fusion = F::elementwise, .code = {"std::tanh({0})", "tanhf({0})"},
     .cost = Cost::per_result_element,
     // tanhf: ex2 and a reciprocal on the SFU (1 - 2 / (e^2x + 1)), about 7 FP32 operations
     // for the range reduction, that form and the small-x polynomial.
     .slots = {.fp32 = 7, .sfu = 2},
     .doc = "hyperbolic tangent"},
    {.kind = K::neg, .min_inputs = 1, .max_inputs = 1, .levels = kAll,
     .real = [](const ScalarArgs& s) { return -s.x; },
     .lax_formula = "(mul x -1)", .homogeneous = 0b1, .fusion = F::elementwise,
     .code = {"(-{0})", "(-{0})"}, .cost = Cost::per_result_element, .slots = {.fp32 = 1},
     .doc = "-x"},
    {.kind = K::erf, .min_inputs = 1, .max_inputs = 1, .levels = kAll,
     .real = [](const ScalarArgs& s) { return std::erf(s.x); },
     .fusion = F::elementwise, .code = {"std::erf({0})", "erff({0})"},
     .cost = Cost::per_result_element,
     .slots = {.fp32 = 20},  // erff: a rational approximation, no SFU instruction
     .doc = "the error function 2/sqrt(pi) * integral of e^-t^2 from 0 to x"},
  };
  // clang-format on
}

// Every row in kind order: the µGraph rows, the model-only ones (ir/ops_model.cpp), the reserved
// ones (empty unless a test filled them), each completed and checked.
std::vector<OpInfo> make_table() {
  std::vector<OpInfo> t;
  for (std::vector<OpInfo> rows :
       {first_elementwise_rows(), structural_rows(), later_unary_rows(), model_op_rows()})
    for (OpInfo& row : rows) t.push_back(std::move(row));
  ScratchRows& scratch = scratch_rows();
  scratch.table_built = true;
  for (OpKind k : {OpKind::scratch_unary, OpKind::scratch_model}) {
    auto it = scratch.rows.find(k);
    t.push_back(it != scratch.rows.end() ? it->second : OpInfo{.kind = k});
  }
  for (size_t i = 0; i < t.size(); ++i) {
    WEFT_CHECK(static_cast<size_t>(t[i].kind) == i, "op table out of order at {}",
               op_kind_name(t[i].kind));
    complete_row(t[i]);
  }
  WEFT_CHECK(static_cast<int>(t.size()) == kNumOpKinds, "op table incomplete");
  return t;
}

}  // namespace

const std::vector<OpInfo>& op_table() {
  static const std::vector<OpInfo> table = make_table();
  return table;
}

OpRows all_ops() {
  const std::vector<OpInfo>& t = op_table();
  return OpRows(t.data(), t.data() + t.size());
}

void fill_scratch_row(OpInfo row) {
  ScratchRows& scratch = scratch_rows();
  WEFT_CHECK(!scratch.table_built, "a scratch row is filled after the table was built");
  WEFT_CHECK(is_scratch_slot(row.kind), "'{}' is not a reserved row", op_kind_name(row.kind));
  WEFT_CHECK(row.levels != 0, "a scratch row must say where it appears");
  OpKind kind = row.kind;
  scratch.rows.insert_or_assign(kind, std::move(row));
}

ScalarConstants scalar_constants(const OpInfo& info, const Attrs& attrs) {
  if (info.constants) return info.constants(attrs);
  ScalarConstants c;
  double* next[] = {&c.k, &c.k2};
  size_t n = 0;
  for (const AttrSpec& a : info.attrs)
    if (a.kind == AttrKind::rational && n < 2) *next[n++] = attrs.get_rational(a.name).to_double();
  return c;
}

double real_value(const OpInfo& info, const Attrs& attrs, double x, double y, double z) {
  ScalarConstants c = scalar_constants(info, attrs);
  return info.real({x, y, z, c.k, c.k2});
}

std::optional<OpKind> op_by_name(std::string_view name) {
  static const std::map<std::string, OpKind, std::less<>> by_name = [] {
    std::map<std::string, OpKind, std::less<>> m;
    for (const OpInfo& info : all_ops()) m.emplace(info.name, info.kind);
    return m;
  }();
  auto it = by_name.find(name);
  if (it == by_name.end()) return std::nullopt;
  return it->second;
}

std::string levels_text(uint8_t levels) {
  std::string where;
  auto add = [&](const char* s) { where += (where.empty() ? "" : ", ") + std::string(s); };
  if (levels & kAtKernel) add("kernel graphs");
  if (levels & kAtBlock) add("block graphs");
  if (levels & kAtThread) add("thread graphs");
  if (levels & kAtModel) add("model functions");
  return where;
}

bool Formula::uses_exp() const {
  for (const FormulaNode& n : nodes)
    if (n.op == FormulaOp::exp) return true;
  return false;
}

const char* fusion_pattern_name(FusionPattern pattern) {
  switch (pattern) {
    case FusionPattern::elementwise:
      return "elementwise";
    case FusionPattern::broadcast:
      return "broadcast";
    case FusionPattern::injective:
      return "injective";
    case FusionPattern::reduction:
      return "reduction";
    case FusionPattern::out_elementwise_fusable:
      return "out-elementwise-fusable";
    case FusionPattern::opaque:
      return "opaque";
  }
  return "?";
}

const AttrSpec* rational_attr(const OpInfo& info) {
  for (const AttrSpec& a : info.attrs)
    if (a.kind == AttrKind::rational) return &a;
  return nullptr;
}

static bool kind_matches(AttrKind kind, const AttrValue& v) {
  switch (kind) {
    case AttrKind::integer:
    case AttrKind::opt_dim:
      return std::holds_alternative<int64_t>(v);
    case AttrKind::rational:
      return std::holds_alternative<Rational>(v);
    case AttrKind::int_list:
    case AttrKind::dim_map:
      return std::holds_alternative<std::vector<int64_t>>(v);
  }
  return false;
}

void complete_attrs(const OpInfo& info, Attrs& attrs) {
  for (const auto& [name, value] : attrs.entries()) {
    const AttrSpec* spec = nullptr;
    for (const AttrSpec& s : info.attrs)
      if (name == s.name) spec = &s;
    if (!spec) {
      std::string known;
      for (const AttrSpec& s : info.attrs)
        known += (known.empty() ? "" : ", ") + std::string(s.name);
      fail(fmt::format(
          "'{}' has no attribute '{}'{}", info.name, name,
          known.empty() ? std::string(" (it takes none)") : fmt::format(" (it takes: {})", known)));
    }
    if (!kind_matches(spec->kind, value)) {
      // Integers are rationals too.
      if (spec->kind == AttrKind::rational && std::holds_alternative<int64_t>(value)) continue;
      fail(fmt::format("attribute '{}' of '{}' has the wrong kind of value", name, info.name));
    }
  }
  for (const AttrSpec& s : info.attrs) {
    if (attrs.has(s.name)) {
      if (s.kind == AttrKind::rational &&
          std::holds_alternative<int64_t>(attrs.entries().at(s.name)))
        attrs.set(s.name, Rational(attrs.get_int(s.name)));
      continue;
    }
    if (s.required) fail(fmt::format("'{}' needs the attribute '{}'", info.name, s.name));
    attrs.set(s.name, s.default_value);
  }
}

}  // namespace weft
