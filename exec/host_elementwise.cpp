// Elementwise table operators on the VM's tensors (f32 lane or f64) in f32 (or f64) semantics
// (one pass, no copies).
#include "exec/host_elementwise.h"

#include "core/error.h"
#include "model/model_ops.h"

namespace weft {

namespace {

// The row's function, constants and the result's shape, or nullopt where the operator is not an
// elementwise row (one with `real`: unary, binary, or a model-only one such as where, pow, clip)
// or the rule refuses the operands.
struct Elementwise {
  RealFn fn;
  ScalarConstants constants;
  Shape shape;
  bool unary;
};

std::optional<Elementwise> elementwise_of(OpKind kind, const std::vector<const Shape*>& shapes,
                                          const Attrs& attrs) {
  const OpInfo& info = op_info(kind);
  const OpClass cls = info.op_class;
  const size_t arity = shapes.size();
  if (!info.real || !info.shape.concrete || arity < 1 || arity > 3 ||
      (cls == OpClass::unary && arity != 1) || (cls == OpClass::binary && arity != 2) ||
      (cls != OpClass::unary && cls != OpClass::binary && cls != OpClass::model))
    return std::nullopt;
  std::vector<TensorType> types;
  for (const Shape* s : shapes) types.push_back({DType::f32, *s});
  Attrs normalized = attrs;
  Shape shape;
  try {
    shape = info.shape.concrete(types, normalized, InferContext{}).at(0).shape;
  } catch (const UserError&) {
    return std::nullopt;  // the caller's µGraph path reports it, with its location
  }
  for (const Shape* s : shapes)
    if (arity > 1 && s->size() != shape.size()) return std::nullopt;  // broadcasting keeps ranks
  if (arity == 1 && numel(shape) != numel(*shapes[0])) return std::nullopt;
  return Elementwise{info.real, scalar_constants(info, normalized), shape, arity == 1};
}

template <bool kF32>
double domain(double x) {
  if constexpr (kF32) return static_cast<double>(static_cast<float>(x));
  return x;
}

// out[i] = fn(a[i]) or fn(a[i], b[i]) with broadcasting, in the f32 domain (kF32) or f64.
template <bool kF32, class Out, class A, class B>
void apply(const Elementwise& e, const A* a, const Shape& a_shape, const B* b, const Shape& b_shape,
           Out* o) {
  const int64_t n = numel(e.shape);
  ScalarArgs s{.k = e.constants.k, .k2 = e.constants.k2};
  const RealFn fn = e.fn;
  if (e.unary) {
    for (int64_t i = 0; i < n; ++i) {
      s.x = domain<kF32>(static_cast<double>(a[i]));
      o[i] = static_cast<Out>(domain<kF32>(fn(s)));
    }
    return;
  }
  if (a_shape == e.shape && b_shape == e.shape) {
    for (int64_t i = 0; i < n; ++i) {
      s.x = domain<kF32>(static_cast<double>(a[i]));
      s.y = domain<kF32>(static_cast<double>(b[i]));
      o[i] = static_cast<Out>(domain<kF32>(fn(s)));
    }
    return;
  }
  // Broadcasting (the rule checked the operands have the result's rank): strides of 0 along the
  // dims an operand has as 1, walked incrementally.
  const size_t rank = e.shape.size();
  const std::vector<int64_t> sa = broadcast_strides(a_shape, e.shape);
  const std::vector<int64_t> sb = broadcast_strides(b_shape, e.shape);
  std::vector<int64_t> idx(rank, 0);
  int64_t oa = 0, ob = 0;
  for (int64_t i = 0; i < n; ++i) {
    s.x = domain<kF32>(static_cast<double>(a[oa]));
    s.y = domain<kF32>(static_cast<double>(b[ob]));
    o[i] = static_cast<Out>(domain<kF32>(fn(s)));
    for (size_t d = rank; d-- > 0;) {
      oa += sa[d];
      ob += sb[d];
      if (++idx[d] < e.shape[d]) break;
      oa -= sa[d] * e.shape[d];
      ob -= sb[d] * e.shape[d];
      idx[d] = 0;
    }
  }
}

// Three operands (where): each read through its lane, broadcast by strides.
template <bool kF32, class Out>
void apply_ternary(const Elementwise& e, const std::vector<HostOperand>& in, Out* o) {
  const int64_t n = numel(e.shape);
  const size_t rank = e.shape.size();
  std::vector<std::vector<int64_t>> strides;
  for (const HostOperand& x : in) strides.push_back(broadcast_strides(*x.shape, e.shape));
  auto load = [&](size_t k, int64_t at) {
    return domain<kF32>(in[k].f32 ? static_cast<double>(in[k].f32[at]) : in[k].f64[at]);
  };
  ScalarArgs s{.k = e.constants.k, .k2 = e.constants.k2};
  std::vector<int64_t> idx(rank, 0);
  int64_t off[3] = {0, 0, 0};
  for (int64_t i = 0; i < n; ++i) {
    s.x = load(0, off[0]);
    s.y = load(1, off[1]);
    s.z = load(2, off[2]);
    o[i] = static_cast<Out>(domain<kF32>(e.fn(s)));
    for (size_t d = rank; d-- > 0;) {
      for (size_t k = 0; k < 3; ++k) off[k] += strides[k][d];
      if (++idx[d] < e.shape[d]) break;
      for (size_t k = 0; k < 3; ++k) off[k] -= strides[k][d] * e.shape[d];
      idx[d] = 0;
    }
  }
}

// Dispatches on the operands' element types (f32 lane or f64).
template <bool kF32, class Out>
void apply_operands(const Elementwise& e, const std::vector<HostOperand>& in, Out* o) {
  if (in.size() == 3) return apply_ternary<kF32>(e, in, o);
  const HostOperand& a = in[0];
  const HostOperand& b = e.unary ? in[0] : in[1];
  if (a.f32 && b.f32) return apply<kF32>(e, a.f32, *a.shape, b.f32, *b.shape, o);
  if (a.f32) return apply<kF32>(e, a.f32, *a.shape, b.f64, *b.shape, o);
  if (b.f32) return apply<kF32>(e, a.f64, *a.shape, b.f32, *b.shape, o);
  apply<kF32>(e, a.f64, *a.shape, b.f64, *b.shape, o);
}

std::vector<const Shape*> shapes_of(const std::vector<HostOperand>& in) {
  std::vector<const Shape*> shapes;
  for (const HostOperand& x : in) shapes.push_back(x.shape);
  return shapes;
}

}  // namespace

bool elementwise_on_host_f32(OpKind kind, const std::vector<HostOperand>& in, const Attrs& attrs,
                             const F32Destination& into) {
  std::optional<Elementwise> e = elementwise_of(kind, shapes_of(in), attrs);
  if (!e) return false;
  apply_operands<true>(*e, in, into(e->shape));
  return true;
}

std::optional<Tensor<double>> elementwise_on_host(OpKind kind,
                                                  const std::vector<const Tensor<double>*>& in,
                                                  const Attrs& attrs, bool in_f32) {
  std::vector<HostOperand> operands;
  for (const Tensor<double>* t : in) operands.push_back(operand_of(*t));
  std::optional<Elementwise> e = elementwise_of(kind, shapes_of(operands), attrs);
  if (!e) return std::nullopt;
  Tensor<double> out(e->shape, 0.0);
  if (in_f32)
    apply_operands<true>(*e, operands, out.data.data());
  else
    apply_operands<false>(*e, operands, out.data.data());
  return out;
}

}  // namespace weft
