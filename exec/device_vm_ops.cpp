// The device executor's operators: run_op evaluates a call's attributes and result shape and
// dispatches on its row's device kernel family (OpInfo::device); one function per family sets up
// that kernel's arguments. An elementwise row, model-only or not, runs from its row alone (its
// CUDA form in weft_dk_scalar, its constants from its attributes).
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "codegen/cuda/device/model_kernel_args.cuh"
#include "codegen/cuda/model_kernel_families.h"
#include "exec/device_vm.h"
#include "model/model_ops.h"

namespace weft {

namespace {

constexpr int64_t kHuge = std::numeric_limits<int64_t>::max() / 4;

// A map that copies `in` element for element into a tensor of `out_shape` (same numel for
// reshape-like copies; callers edit the per-dim fields for the other movements).
weft_dk_map_args identity_map(const DeviceTensor& in, void* out, DType out_dtype,
                              const Shape& out_shape) {
  weft_dk_map_args a{};
  a.in = in.data();
  a.out = out;
  a.in_dtype = dk_dtype_code(in.dtype);
  a.out_dtype = dk_dtype_code(out_dtype);
  a.rank = static_cast<int>(out_shape.size());
  a.numel = numel(out_shape);
  auto os = strides_of(out_shape);
  auto is = strides_of(in.shape);
  for (size_t d = 0; d < out_shape.size(); ++d) {
    a.dims[d] = out_shape[d];
    a.out_stride[d] = os[d];
    a.div[d] = 1;
    a.step[d] = 1;
    a.start[d] = 0;
    a.bound[d] = kHuge;
    a.mod[d] = kHuge;
    a.in_stride[d] = d < is.size() && in.shape.size() == out_shape.size() ? is[d] : 0;
  }
  return a;
}

// The operands every index kernel (gather, embedding, gather_elements, gather_nd) takes: data,
// indices, result, their dtypes, and the flag an index out of range raises.
template <class Args>
Args index_operands(const DeviceTensor& x, const DeviceTensor& ids, const DeviceTensor& out,
                    DType out_dtype, void* error_flag) {
  Args a{};
  a.x = x.data();
  a.ids = ids.data();
  a.out = out.data();
  a.x_dtype = dk_dtype_code(x.dtype);
  a.ids_dtype = dk_dtype_code(ids.dtype);
  a.out_dtype = dk_dtype_code(out_dtype);
  a.error = static_cast<int64_t*>(error_flag);
  return a;
}

int64_t normalized(int64_t dim, size_t rank) {
  return dim < 0 ? dim + static_cast<int64_t>(rank) : dim;
}

}  // namespace

DeviceTensor DeviceVm::converted(const DeviceTensor& t, DType dtype) {
  if (t.dtype == dtype) return t;
  trace_op_ = OpKind::cast;
  DeviceTensor out = allocate(dtype, t.shape);
  weft_dk_map_args a = identity_map(t, out.data(), dtype, t.shape);
  launch("weft_dk_map_launch", a);
  return out;
}

DeviceValue DeviceVm::run_op(const Binding& b, const OpInfo& info,
                             const std::vector<const DeviceTensor*>& in, const SymBinding& heap) {
  const Call& c = b.call;
  trace_op_ = info.kind;
  trace_var_ = b.var;
  Attrs attrs = evaluate_attrs(c.attrs, heap, c.loc);
  // The result's shape and dtype, from the deduced type at this frame's variables; a tuple's
  // parts (split's) take their shapes from the operand.
  Shape out_shape;
  const bool tuple = b.type.kind == MTypeKind::tuple;
  bool known = tuple || (b.type.is_tensor() && b.type.dims.has_value());
  if (known && !tuple)
    for (const SymExpr& d : *b.type.dims) {
      SymEvalResult r = try_evaluate(d, heap);
      if (!r.value) {
        known = false;
        break;
      }
      out_shape.push_back(*r.value);
    }
  for (const DeviceTensor* t : in)
    if (t->shape.size() > WEFT_DK_MAX_RANK) known = false;
  if (!known || out_shape.size() > WEFT_DK_MAX_RANK) return host_fallback(b, in, heap);
  const OpCall op{b, info, in, attrs, out_shape, b.type.dtype, heap};
  switch (info.device) {
    case DeviceKernel::elementwise:
      return elementwise_op(op);
    case DeviceKernel::movement:
      return movement_op(op);
    case DeviceKernel::rows:
      return rows_op(op);
    case DeviceKernel::gather:
      return gather_op(op);
    case DeviceKernel::matmul:
      return matmul_op(op);
    case DeviceKernel::position:
      return position_op(op);
    case DeviceKernel::generate:
      return generate_op(op);
    case DeviceKernel::window:
      return window_op(op);
    case DeviceKernel::none:  // no device kernel: the host runs it, counted
      break;
  }
  return host_fallback(b, in, heap);
}

DeviceValue DeviceVm::elementwise_op(const OpCall& op) {
  DeviceTensor out = allocate(op.dtype, op.out_shape);
  weft_dk_elementwise_args a{};
  a.out = out.data();
  a.out_dtype = dk_dtype_code(op.dtype);
  a.operands = static_cast<int>(op.in.size());
  a.rank = static_cast<int>(op.out_shape.size());
  a.op = static_cast<int>(op.info.kind);
  a.numel = numel(op.out_shape);
  ScalarConstants k;
  try {
    k = scalar_constants(op.info, op.attrs);
  } catch (const UserError& e) {
    throw UserError(op.b.call.loc, e.message());
  }
  a.k = k.k;
  a.k2 = k.k2;
  for (size_t d = 0; d < op.out_shape.size(); ++d) a.dims[d] = op.out_shape[d];
  for (size_t j = 0; j < op.in.size(); ++j) {
    a.in[j] = op.in[j]->data();
    a.in_dtype[j] = dk_dtype_code(op.in[j]->dtype);
    auto st = broadcast_strides(op.in[j]->shape, op.out_shape);
    for (size_t d = 0; d < st.size(); ++d) a.stride[j][d] = st[d];
  }
  launch("weft_dk_elementwise_launch", a);
  return DeviceValue{out};
}

DeviceValue DeviceVm::movement_op(const OpCall& op) {
  const DeviceTensor& x = *op.in[0];
  const OpKind kind = op.info.kind;
  const Shape& out_shape = op.out_shape;
  const auto in_strides = strides_of(x.shape);
  auto dim_attr = [&](const char* name) {
    return static_cast<size_t>(normalized(op.attrs.get_int(name), x.shape.size()));
  };
  if (kind == OpKind::reshape) {
    // Same elements in the same order: the buffer, seen with the new shape.
    DeviceTensor out = converted(x, op.dtype);
    out.shape = out_shape;
    return DeviceValue{out};
  }
  if (kind == OpKind::concat || kind == OpKind::split) return parts_op(op);
  // One index mapping from the operand to the result (identity_map reads an operand of the
  // result's rank with its own strides).
  DeviceTensor out = allocate(op.dtype, out_shape);
  weft_dk_map_args a = identity_map(x, out.data(), op.dtype, out_shape);
  if (kind == OpKind::permute) {
    const auto& perm = op.attrs.get_list("perm");
    for (size_t d = 0; d < out_shape.size(); ++d)
      a.in_stride[d] = in_strides[static_cast<size_t>(normalized(perm[d], x.shape.size()))];
  } else if (kind == OpKind::slice) {
    const size_t dim = dim_attr("dim");
    int64_t start = op.attrs.get_int("start"), size = op.attrs.get_int("size");
    if (start < 0 || size < 0 || start > x.shape[dim] - size)
      throw UserError(op.b.call.loc,
                      fmt::format("slice [{}, {}) of dim {} is outside its extent {}", start,
                                  start + size, dim, x.shape[dim]));
    a.start[dim] = start;
  } else if (kind == OpKind::expand) {
    auto st = broadcast_strides(x.shape, out_shape);
    for (size_t d = 0; d < out_shape.size(); ++d) a.in_stride[d] = st[d];
  } else if (kind == OpKind::repeat) {
    const size_t dim = dim_attr("dim");
    a.mod[dim] = x.shape[dim];
  } else if (kind == OpKind::slice_steps) {
    Shape shape;
    auto take = slice_steps_take(x.shape, op.attrs, shape);
    WEFT_CHECK(shape == out_shape, "slice_steps' deduced shape differs at run time");
    for (size_t d = 0; d < out_shape.size(); ++d) {
      a.start[d] = take[d].first;
      a.step[d] = take[d].second;
    }
  } else if (kind == OpKind::tile) {
    for (size_t d = 0; d < out_shape.size(); ++d) a.mod[d] = std::max<int64_t>(x.shape[d], 1);
  } else if (kind == OpKind::pad) {
    const auto& pads = op.attrs.get_list("pads");
    a.fill = static_cast<float>(op.attrs.get_rational("value").to_double());
    for (size_t d = 0; d < out_shape.size(); ++d) {
      a.start[d] = -pads[d];  // negative pads crop
      a.bound[d] = x.shape[d];
    }
  } else {
    WEFT_FAIL("'{}' has no index mapping on the device", op.info.name);
  }
  launch("weft_dk_map_launch", a);
  return DeviceValue{out};
}

// concat (each operand mapped into its region of the result) and split (a tuple of parts).
DeviceValue DeviceVm::parts_op(const OpCall& op) {
  const DeviceTensor& x = *op.in[0];
  const auto dim = static_cast<size_t>(normalized(op.attrs.get_int("dim"), x.shape.size()));
  if (op.info.kind == OpKind::concat) {
    DeviceTensor out = allocate(op.dtype, op.out_shape);
    auto os = strides_of(op.out_shape);
    int64_t at = 0;
    for (const DeviceTensor* t : op.in) {
      weft_dk_map_args a = identity_map(*t, out.data(), op.dtype, t->shape);
      for (size_t d = 0; d < os.size(); ++d) a.out_stride[d] = os[d];
      a.out_offset = at * os[dim];
      at += t->shape[dim];
      if (a.numel > 0) launch("weft_dk_map_launch", a);
    }
    return DeviceValue{out};
  }
  const int64_t parts = op.attrs.get_int("parts");
  WEFT_CHECK(parts >= 1 && x.shape[dim] % parts == 0, "split's parts were not checked");
  Shape part = x.shape;
  part[dim] /= parts;
  const auto in_strides = strides_of(x.shape);
  auto tu = std::make_shared<DeviceTuple>();
  for (int64_t i = 0; i < parts; ++i) {
    DeviceTensor out = allocate(op.dtype, part);
    weft_dk_map_args a = identity_map(x, out.data(), op.dtype, part);
    for (size_t d = 0; d < part.size(); ++d) a.in_stride[d] = in_strides[d];
    a.start[dim] = i * part[dim];
    if (a.numel > 0) launch("weft_dk_map_launch", a);
    tu->push_back(DeviceValue{std::move(out)});
  }
  return DeviceValue{std::shared_ptr<const DeviceTuple>(std::move(tu))};
}

DeviceValue DeviceVm::rows_op(const OpCall& op) {
  const DeviceTensor& x = *op.in[0];
  const OpKind kind = op.info.kind;
  DeviceTensor out = allocate(op.dtype, op.out_shape);
  weft_dk_rows_args a{};
  a.in = x.data();
  a.out = out.data();
  a.in_dtype = dk_dtype_code(x.dtype);
  a.out_dtype = dk_dtype_code(op.dtype);
  a.inner = 1;
  a.to = 1;
  if (kind == OpKind::global_avg_pool || kind == OpKind::global_max_pool) {
    // The spatial dims of each [N, C] plane, as one row.
    a.kind = kind == OpKind::global_avg_pool ? 1 : 2;
    a.outer = x.shape[0] * x.shape[1];
    a.n = numel(x.shape) / std::max<int64_t>(a.outer, 1);
    if (a.outer > 0) launch("weft_dk_rows_launch", a);
    return DeviceValue{out};
  }
  // The kernel's modes: 0 sum, 1 mean, 2 max (to size `to`), 3 softmax, 4 layer norm, 5 rms norm
  // (eps in k).
  int64_t dim = static_cast<int64_t>(x.shape.size()) - 1;
  if (kind == OpKind::sum || kind == OpKind::mean || kind == OpKind::max) {
    a.kind = kind == OpKind::sum ? 0 : kind == OpKind::mean ? 1 : 2;
    dim = normalized(op.attrs.get_int("dim"), x.shape.size());
    a.to = op.attrs.get_int("to");
  } else if (kind == OpKind::softmax_safe || kind == OpKind::softmax) {
    // The composite softmax (exp(x) / sum) equals the safe one's value; the kernel subtracts the
    // row's max either way.
    a.kind = 3;
    dim = normalized(op.attrs.get_int("dim"), x.shape.size());
  } else if (kind == OpKind::rms_norm) {
    a.kind = 5;
    dim = normalized(op.attrs.get_int("dim"), x.shape.size());
    a.k = static_cast<float>(op.attrs.get_rational("eps").to_double());
  } else if (kind == OpKind::layer_norm) {
    a.kind = 4;
    a.k = static_cast<float>(op.attrs.get_rational("eps").to_double());
  } else {
    WEFT_FAIL("'{}' has no row kernel mode", op.info.name);
  }
  a.n = x.shape[static_cast<size_t>(dim)];
  for (size_t d = static_cast<size_t>(dim) + 1; d < x.shape.size(); ++d) a.inner *= x.shape[d];
  a.outer = numel(x.shape) / std::max<int64_t>(a.n * a.inner, 1);
  launch("weft_dk_rows_launch", a);
  return DeviceValue{out};
}

DeviceValue DeviceVm::gather_op(const OpCall& op) {
  const DeviceTensor &x = *op.in[0], &ids = *op.in[1];
  const OpKind kind = op.info.kind;
  DeviceTensor out = allocate(op.dtype, op.out_shape);
  if (kind == OpKind::gather_elements || kind == OpKind::gather_nd) {
    auto a = index_operands<weft_dk_index_args>(x, ids, out, op.dtype, error_flag_->data);
    a.numel = numel(op.out_shape);
    a.rank = static_cast<int>(x.shape.size());
    std::copy(x.shape.begin(), x.shape.end(), a.x_dims);
    if (kind == OpKind::gather_elements) {
      a.axis = static_cast<int>(normalized(op.attrs.get_int("axis"), x.shape.size()));
      std::copy(ids.shape.begin(), ids.shape.end(), a.dims);
      a.site = index_site(op.b.call.loc,
                          fmt::format("gather_elements index out of range for dim {} of extent {} "
                                      "(valid: {}..{}), or not an integer",
                                      a.axis, x.shape[static_cast<size_t>(a.axis)],
                                      -x.shape[static_cast<size_t>(a.axis)],
                                      x.shape[static_cast<size_t>(a.axis)] - 1));
    } else {
      a.kind = 1;
      a.batch_dims = static_cast<int>(op.attrs.get_int("batch_dims"));
      a.m = ids.shape.back();
      const auto b = static_cast<size_t>(a.batch_dims);
      int64_t batches = 1;
      a.inner = 1;
      for (size_t d = 0; d < b; ++d) batches *= x.shape[d];
      for (size_t d = b + static_cast<size_t>(a.m); d < x.shape.size(); ++d) a.inner *= x.shape[d];
      a.per_batch = numel(x.shape) / std::max<int64_t>(batches, 1);
      a.tuples = numel(ids.shape) / std::max<int64_t>(a.m * batches, 1);
      a.site = index_site(op.b.call.loc,
                          fmt::format("gather_nd index out of range for dims {}..{} of the data "
                                      "(negative ones count from the end), or not an integer",
                                      b, b + static_cast<size_t>(a.m) - 1));
    }
    if (a.numel > 0) launch("weft_dk_index_launch", a);
    return DeviceValue{out};
  }
  const bool gather = kind == OpKind::gather;  // else embedding: rows of a table
  auto a = index_operands<weft_dk_gather_args>(x, ids, out, op.dtype, error_flag_->data);
  auto axis =
      static_cast<size_t>(gather ? normalized(op.attrs.get_int("axis"), x.shape.size()) : 0);
  a.extent = x.shape[axis];
  a.lowest = gather ? -a.extent : 0;
  a.count = numel(ids.shape);
  a.site = index_site(op.b.call.loc,
                      gather ? fmt::format("gather index out of range for dim {} of extent {} "
                                           "(valid: {}..{}), or not an integer",
                                           axis, a.extent, -a.extent, a.extent - 1)
                             : fmt::format("embedding index not an integer in [0, {})", a.extent));
  a.outer = 1;
  a.inner = 1;
  for (size_t d = 0; d < axis; ++d) a.outer *= x.shape[d];
  for (size_t d = axis + 1; d < x.shape.size(); ++d) a.inner *= x.shape[d];
  launch("weft_dk_gather_launch", a);
  return DeviceValue{out};
}

DeviceValue DeviceVm::matmul_op(const OpCall& op) {
  const DeviceTensor &x = *op.in[0], &y = *op.in[1];
  const Shape& out_shape = op.out_shape;
  DeviceTensor out = allocate(op.dtype, out_shape);
  weft_dk_matmul_args a{};
  a.a = x.data();
  a.b = y.data();
  a.out = out.data();
  a.a_dtype = dk_dtype_code(x.dtype);
  a.b_dtype = dk_dtype_code(y.dtype);
  a.out_dtype = dk_dtype_code(op.dtype);
  const size_t r = out_shape.size();
  a.m = out_shape[r - 2];
  a.n = out_shape[r - 1];
  a.k = x.shape.back();
  a.batch_rank = static_cast<int>(r - 2);
  a.batch = 1;
  Shape batch(out_shape.begin(), out_shape.end() - 2);
  Shape xb(x.shape.begin(), x.shape.end() - 2), yb(y.shape.begin(), y.shape.end() - 2);
  auto sx = broadcast_strides(xb, batch), sy = broadcast_strides(yb, batch);
  for (size_t d = 0; d < batch.size(); ++d) {
    a.batch_dims[d] = batch[d];
    a.a_stride[d] = sx[d] * a.m * a.k;
    a.b_stride[d] = sy[d] * a.k * a.n;
    a.batch *= batch[d];
  }
  launch("weft_dk_matmul_launch", a);
  return DeviceValue{out};
}

DeviceValue DeviceVm::position_op(const OpCall& op) {
  const DeviceTensor& x = *op.in[0];
  const bool rope = op.info.kind == OpKind::rope;  // else causal_mask
  DeviceTensor out = allocate(op.dtype, op.out_shape);
  weft_dk_position_args a{};
  a.in = x.data();
  a.out = out.data();
  a.in_dtype = dk_dtype_code(x.dtype);
  a.out_dtype = dk_dtype_code(op.dtype);
  a.kind = rope ? 0 : 1;
  a.numel = numel(x.shape);
  a.rows = x.shape[x.shape.size() - 2];
  a.cols = x.shape.back();
  a.offset = op.attrs.get_int("offset");
  a.theta = rope ? static_cast<float>(op.attrs.get_rational("theta").to_double()) : 0.0f;
  if (a.numel > 0) launch("weft_dk_position_launch", a);
  return DeviceValue{out};
}

DeviceValue DeviceVm::generate_op(const OpCall& op) {
  const OpKind kind = op.info.kind;
  if (kind == OpKind::dims_tensor && op.out_shape[0] > WEFT_DK_MAX_RANK)
    return host_fallback(op.b, op.in, op.heap);
  DeviceTensor out = allocate(op.dtype, op.out_shape);
  weft_dk_generate_args a{};
  a.out = out.data();
  a.out_dtype = dk_dtype_code(op.dtype);
  a.numel = numel(op.out_shape);
  if (kind == OpKind::fill) {
    a.value = static_cast<float>(op.attrs.get_rational("value").to_double());
  } else if (kind == OpKind::range) {
    a.kind = 1;
    a.start = op.attrs.get_int("start");
    a.delta = op.attrs.get_int("delta");
  } else {
    WEFT_CHECK(kind == OpKind::dims_tensor, "'{}' generates nothing", op.info.name);
    a.kind = 2;
    const auto& values = op.attrs.get_list("values");
    std::copy(values.begin(), values.end(), a.values);
  }
  if (a.numel > 0) launch("weft_dk_generate_launch", a);
  return DeviceValue{out};
}

DeviceValue DeviceVm::window_op(const OpCall& op) {
  const DeviceTensor& x = *op.in[0];
  const OpKind kind = op.info.kind;
  const Attrs& attrs = op.attrs;
  const SourceLoc& loc = op.b.call.loc;
  DeviceTensor out = allocate(op.dtype, op.out_shape);
  weft_dk_window_args a{};
  a.x = x.data();
  a.out = out.data();
  a.x_dtype = dk_dtype_code(x.dtype);
  a.out_dtype = dk_dtype_code(op.dtype);
  a.n = x.shape[0];
  a.c = x.shape[1];
  a.group = 1;
  auto geometry = [&](const std::vector<int64_t>& kernel, bool ceil_mode, const char* name) {
    Windows3 w;
    try {
      w = concrete_windows(x.shape, kernel, attrs, ceil_mode, name);
    } catch (const UserError& e) {
      throw UserError(loc, e.message());
    }
    for (int i = 0; i < 3; ++i) {
      a.in[i] = w.in[i];
      a.k[i] = w.k[i];
      a.s[i] = w.s[i];
      a.d[i] = w.d[i];
      a.pb[i] = w.pb[i];
      a.pe[i] = w.pe[i];
      a.out_dims[i] = w.out[i];
    }
  };
  // The kernel's modes: 0 conv, 1 max pool, 2 average pool, 3 max-pool indices, 4 lrn.
  if (kind == OpKind::conv) {
    const DeviceTensor& wt = *op.in[1];
    a.kind = 0;
    a.w = wt.data();
    a.w_dtype = dk_dtype_code(wt.dtype);
    a.m = wt.shape[0];
    a.group = attrs.get_int("group");
    if (a.group < 1 || a.c != wt.shape[1] * a.group || a.m % a.group != 0)
      throw UserError(loc, fmt::format("conv: x {} and weight {} do not agree for group={}",
                                       shape_str(x.shape), shape_str(wt.shape), a.group));
    geometry({wt.shape.begin() + 2, wt.shape.end()}, false, "conv");
  } else if (kind == OpKind::lrn) {
    a.kind = 4;
    a.size = attrs.get_int("size");
    a.alpha = static_cast<float>(attrs.get_rational("alpha").to_double());
    a.beta = static_cast<float>(attrs.get_rational("beta").to_double());
    a.bias = static_cast<float>(attrs.get_rational("bias").to_double());
    for (int i = 0; i < 3; ++i) a.in[i] = a.out_dims[i] = 1;
    a.in[2] = numel(x.shape) / std::max<int64_t>(a.n * a.c, 1);
  } else {
    WEFT_CHECK(
        kind == OpKind::max_pool || kind == OpKind::avg_pool || kind == OpKind::max_pool_indices,
        "'{}' has no window kernel mode", op.info.name);
    a.kind = kind == OpKind::max_pool ? 1 : kind == OpKind::avg_pool ? 2 : 3;
    a.include_pad = kind == OpKind::avg_pool && attrs.get_int("count_include_pad") == 1;
    geometry(attrs.get_list("kernel"), attrs.get_int("ceil_mode") == 1,
             kind == OpKind::avg_pool ? "avg_pool" : "max_pool");
  }
  if (numel(op.out_shape) > 0) launch("weft_dk_window_launch", a);
  return DeviceValue{out};
}

}  // namespace weft
