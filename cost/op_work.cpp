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

double issue_slots(OpKind kind) {
  const IssueSlots& s = op_info(kind).slots;
  return s.fp32 + s.sfu * kSfuSlots;
}

double cuda_flops_of(const Graph& g, const Op& op) {
  switch (op_info(op.kind).cost) {
    case CostClass::per_result_element:
      return 2.0 * issue_slots(op.kind) *
             static_cast<double>(numel(g.type(op.outputs.at(0)).shape));
    case CostClass::per_operand_element:
      return 2.0 * issue_slots(op.kind) * static_cast<double>(numel(g.type(op.inputs.at(0)).shape));
    case CostClass::contraction:
    case CostClass::data_movement:
    case CostClass::body:
      return 0;
  }
  return 0;
}

}  // namespace weft
