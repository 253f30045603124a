// reshape, permute, concat, repeat and split in the VM's f32 lane: the values copied (converted
// from f64 where the operand has no f32 values) in the result's order.
#include "exec/host_movement.h"

#include <algorithm>
#include <optional>

#include "core/around_dim.h"
#include "core/error.h"
#include "model/permute_values.h"

namespace weft {

namespace {

template <class From>
void copy_values(const From* from, int64_t n, float* to) {
  std::transform(from, from + n, to, [](From x) { return static_cast<float>(x); });
}

bool reshape(const HostOperand& x, const Attrs& attrs, const F32Destination& into) {
  const OpInfo& info = op_info(OpKind::reshape);
  Attrs normalized = attrs;
  Shape shape;
  try {
    shape = info.shape.concrete({{DType::f32, *x.shape}}, normalized, InferContext{}).at(0).shape;
  } catch (const UserError&) {
    return false;  // the caller's path reports it, with its location
  }
  if (numel(shape) != x.numel()) return false;
  float* out = into(shape);
  if (x.f32)
    copy_values(x.f32, x.numel(), out);
  else
    copy_values(x.f64, x.numel(), out);
  return true;
}

bool permute(const HostOperand& x, const Attrs& attrs, const F32Destination& into) {
  if (!attrs.has("perm")) return false;
  const std::vector<int64_t>& perm = attrs.get_list("perm");
  const size_t rank = x.shape->size();
  if (perm.size() != rank) return false;
  const std::vector<int64_t> p = normalized_perm(perm, rank);
  std::vector<bool> seen(rank, false);
  for (int64_t axis : p) {
    if (axis < 0 || axis >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(axis)])
      return false;
    seen[static_cast<size_t>(axis)] = true;
  }
  float* out = into(permuted_shape(*x.shape, p));
  if (x.f32)
    permute_values(x.f32, *x.shape, p, out);
  else
    permute_values(x.f64, *x.shape, p, out);
  return true;
}

// concat and repeat: for each index of the dims before `dim`, each operand's run of elements
// (its extent along dim times the dims after it) appended in order, `times` times for repeat.
bool join(OpKind kind, const std::vector<HostOperand>& in, const Attrs& attrs,
          const F32Destination& into) {
  std::vector<TensorType> types;
  for (const HostOperand& x : in) types.push_back({DType::f32, *x.shape});
  Attrs normalized = attrs;
  Shape shape;
  try {
    shape = op_info(kind).shape.concrete(types, normalized, InferContext{}).at(0).shape;
  } catch (const UserError&) {
    return false;  // the caller's path reports it, with its location
  }
  // The shape rule normalized dim (0 <= dim < rank).
  const auto dim = static_cast<size_t>(normalized.get_int("dim"));
  const int64_t times = kind == OpKind::repeat ? normalized.get_int("times") : 1;
  const AroundDim around = around_dim(shape, dim);
  float* out = into(shape);
  for (int64_t o = 0; o < around.outer; ++o)
    for (int64_t t = 0; t < times; ++t)
      for (const HostOperand& x : in) {
        const int64_t run = (*x.shape)[dim] * around.inner;
        if (x.f32)
          copy_values(x.f32 + o * run, run, out);
        else
          copy_values(x.f64 + o * run, run, out);
        out += run;
      }
  return true;
}

}  // namespace

std::optional<std::vector<Tensor<float>>> split_on_host_f32(const HostOperand& x,
                                                            const Attrs& attrs) {
  Attrs normalized = attrs;
  std::vector<TensorType> parts;
  try {
    parts =
        op_info(OpKind::split).shape.concrete({{DType::f32, *x.shape}}, normalized, InferContext{});
  } catch (const UserError&) {
    return std::nullopt;  // the caller's path reports it, with its location
  }
  // The shape rule normalized dim (0 <= dim < rank) and made at least one part.
  const auto dim = static_cast<size_t>(normalized.get_int("dim"));
  const AroundDim around = around_dim(*x.shape, dim);
  const int64_t run = parts[0].shape[dim] * around.inner;
  const int64_t row = around.extent * around.inner;
  std::vector<Tensor<float>> out;
  for (size_t p = 0; p < parts.size(); ++p) {
    Tensor<float>& t = out.emplace_back(parts[p].shape, 0.0f);
    for (int64_t o = 0; o < around.outer; ++o) {
      const int64_t from = o * row + static_cast<int64_t>(p) * run;
      if (x.f32)
        copy_values(x.f32 + from, run, t.data.data() + o * run);
      else
        copy_values(x.f64 + from, run, t.data.data() + o * run);
    }
  }
  return out;
}

bool movement_on_host_f32(OpKind kind, const std::vector<HostOperand>& in, const Attrs& attrs,
                          const F32Destination& into) {
  if (in.empty()) return false;
  if (kind == OpKind::concat || (kind == OpKind::repeat && in.size() == 1))
    return join(kind, in, attrs, into);
  if (in.size() != 1) return false;
  if (kind == OpKind::reshape) return reshape(in[0], attrs, into);
  if (kind == OpKind::permute) return permute(in[0], attrs, into);
  return false;
}

}  // namespace weft
