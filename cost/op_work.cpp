// Per-operator work counts shared by the library, block-graph and roofline estimates.
#include "cost/op_work.h"

#include <algorithm>

namespace weft {

MatmulDims matmul_dims(const TensorType& a, const TensorType& b) {
  const Shape& sa = a.shape;
  const Shape& sb = b.shape;
  size_t r = sa.size();
  WEFT_CHECK(r >= 2 && sb.size() == r, "matmul operands {} and {}", a.str(), b.str());
  MatmulDims d;
  for (size_t i = 0; i + 2 < r; ++i) d.batch *= std::max(sa[i], sb[i]);
  d.m = sa[r - 2];
  d.k = sa[r - 1];
  d.n = sb[r - 1];
  return d;
}

bool on_tensor_cores(DType dtype, const Target& target) {
  return dtype != DType::f32 && target.tensor_flops_f16 > 0;
}

double elementwise_slots(OpKind kind) {
  switch (kind) {
    case OpKind::add:
    case OpKind::sub:
    case OpKind::mul:
    case OpKind::scale:
    case OpKind::shift:
    case OpKind::sqr:
    case OpKind::relu:
      return 1;
    case OpKind::exp:
      return kSfuSlots + 1;  // ex2 on the SFU after a scale by log2(e)
    case OpKind::sqrt:
      return kSfuSlots;  // MUFU.SQRT
    case OpKind::div:
      return kSfuSlots + 1;  // reciprocal on the SFU, then a multiply
    case OpKind::silu:
      return 2 * kSfuSlots + 3;  // exp(-x), 1 + ., reciprocal, x * .
    case OpKind::gelu:
      return 24;  // erf by a ~20-term polynomial, 3 more ops
    default:
      break;
  }
  WEFT_CHECK(false, "'{}' is not elementwise", op_info(kind).name);
  return 0;
}

double cuda_flops_of(const Graph& g, const Op& op) {
  auto out_elems = [&] { return static_cast<double>(numel(g.type(op.outputs.at(0)).shape)); };
  auto in_elems = [&] { return static_cast<double>(numel(g.type(op.inputs.at(0)).shape)); };
  switch (op_info(op.kind).op_class) {
    case OpClass::unary:
    case OpClass::binary:
      return 2.0 * elementwise_slots(op.kind) * out_elems();
    case OpClass::reduction:
      return 2.0 * in_elems();  // one add / max per input element
    case OpClass::composite:
      // rms_norm: square, sum, multiply by the row's reciprocal root (computed once per row).
      // softmax: exp, sum, multiply by the row's reciprocal sum.
      if (op.kind == OpKind::rms_norm) return 2.0 * 3 * in_elems();
      return 2.0 * (elementwise_slots(OpKind::exp) + 2) * in_elems();
    case OpClass::structure:
      if (is_accumulator(op.kind)) return op.kind == OpKind::accum_concat ? 0 : 2.0 * in_elems();
      return 0;
    case OpClass::matmul:
    case OpClass::movement:
    case OpClass::hierarchy:
      return 0;
  }
  return 0;
}

}  // namespace weft
