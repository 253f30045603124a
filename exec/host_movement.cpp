// reshape and permute in the VM's f32 lane: the values copied (converted from f64 where the
// operand has no f32 values) in the result's order.
#include "exec/host_movement.h"

#include <algorithm>

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

}  // namespace

bool movement_on_host_f32(OpKind kind, const std::vector<HostOperand>& in, const Attrs& attrs,
                          const F32Destination& into) {
  if (in.size() != 1) return false;
  if (kind == OpKind::reshape) return reshape(in[0], attrs, into);
  if (kind == OpKind::permute) return permute(in[0], attrs, into);
  return false;
}

}  // namespace weft
