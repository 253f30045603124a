// Elementwise table operators on the VM's f64 tensors in f32 (or f64) semantics (one pass, no
// copies).
#include "exec/host_elementwise.h"

#include "core/error.h"
#include "model/model_ops.h"

namespace weft {

namespace {

double to_f32(double x) {
  return static_cast<double>(static_cast<float>(x));
}
double as_is(double x) {
  return x;
}

}  // namespace

std::optional<Tensor<double>> elementwise_on_host(OpKind kind,
                                                  const std::vector<const Tensor<double>*>& in,
                                                  const Attrs& attrs, bool in_f32) {
  double (*const f32)(double) = in_f32 ? to_f32 : as_is;
  const OpInfo& info = op_info(kind);
  const OpClass cls = info.op_class;
  if ((cls != OpClass::unary && cls != OpClass::binary) || !info.real || !info.shape.concrete ||
      in.size() != (cls == OpClass::unary ? 1u : 2u))
    return std::nullopt;
  std::vector<TensorType> types;
  for (const Tensor<double>* t : in) types.push_back({DType::f32, t->shape});
  Attrs normalized = attrs;
  Shape shape;
  try {
    shape = info.shape.concrete(types, normalized, InferContext{}).at(0).shape;
  } catch (const UserError&) {
    return std::nullopt;  // the caller's µGraph path reports it, with its location
  }
  const ScalarConstants c = scalar_constants(info, normalized);
  const RealFn fn = info.real;
  Tensor<double> out(shape, 0.0);
  double* o = out.data.data();
  const int64_t n = out.numel();
  ScalarArgs s{.k = c.k, .k2 = c.k2};
  if (cls == OpClass::unary) {
    const double* x = in[0]->data.data();
    for (int64_t i = 0; i < n; ++i) {
      s.x = f32(x[i]);
      o[i] = f32(fn(s));
    }
    return out;
  }
  const Tensor<double>&a = *in[0], &b = *in[1];
  if (a.shape == shape && b.shape == shape) {
    for (int64_t i = 0; i < n; ++i) {
      s.x = f32(a.data[static_cast<size_t>(i)]);
      s.y = f32(b.data[static_cast<size_t>(i)]);
      o[i] = f32(fn(s));
    }
    return out;
  }
  // Broadcasting (the row's rule checked the operands have the result's rank): strides of 0
  // along the dims an operand has as 1, walked incrementally.
  const size_t rank = shape.size();
  if (a.shape.size() != rank || b.shape.size() != rank) return std::nullopt;
  const std::vector<int64_t> sa = broadcast_strides(a.shape, shape);
  const std::vector<int64_t> sb = broadcast_strides(b.shape, shape);
  std::vector<int64_t> idx(rank, 0);
  int64_t oa = 0, ob = 0;
  for (int64_t i = 0; i < n; ++i) {
    s.x = f32(a.data[static_cast<size_t>(oa)]);
    s.y = f32(b.data[static_cast<size_t>(ob)]);
    o[i] = f32(fn(s));
    for (size_t d = rank; d-- > 0;) {
      oa += sa[d];
      ob += sb[d];
      if (++idx[d] < shape[d]) break;
      oa -= sa[d] * shape[d];
      ob -= sb[d] * shape[d];
      idx[d] = 0;
    }
  }
  return out;
}

}  // namespace weft
