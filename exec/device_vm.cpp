// The device-resident model executor: the VM's instructions over device values, operators
// dispatched to the model kernel library by kind, host fallbacks counted, CUDA graphs per binding.
#include "exec/device_vm.h"

#include <fmt/format.h>

#include <limits>

#include "codegen/cuda/device/model_kernel_args.cuh"
#include "codegen/cuda/emit_model_kernels.h"
#include "core/dtype_convert.h"
#include "exec/register_program.h"
#include "interp/interpreter.h"
#include "model/model_ops.h"

namespace weft {

void* DeviceTensor::data() const {
  return static_cast<uint8_t*>(buffer->data) + offset * dtype_bytes(dtype);
}

const DeviceTuple* DeviceValue::tuple() const {
  auto* p = std::get_if<std::shared_ptr<const DeviceTuple>>(&v);
  return p ? p->get() : nullptr;
}

namespace {

constexpr int64_t kHuge = std::numeric_limits<int64_t>::max() / 4;

int dtype_code(DType d) {
  switch (d) {
    case DType::f32:
      return 0;
    case DType::f16:
      return 1;
    case DType::bf16:
      return 2;
  }
  return 0;
}

// A map that copies `in` element for element into a tensor of `out_shape` (same numel for
// reshape-like copies; callers edit the per-dim fields for the other movements).
weft_dk_map_args identity_map(const DeviceTensor& in, void* out, DType out_dtype,
                              const Shape& out_shape) {
  weft_dk_map_args a{};
  a.in = in.data();
  a.out = out;
  a.in_dtype = dtype_code(in.dtype);
  a.out_dtype = dtype_code(out_dtype);
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

int64_t normalized(int64_t dim, size_t rank) {
  return dim < 0 ? dim + static_cast<int64_t>(rank) : dim;
}

}  // namespace

DeviceVm::DeviceVm(const Module& module, Backend backend, DeviceVmOptions options)
    : vm_(module,
          [] {
            VmOptions o;
            o.plan = false;
            return o;
          }()),
      options_(std::move(options)),
      device_(open_device(backend, options_.build, options_.emulated_graphs)) {
  // Zeroed once here: clearing it inside a captured run would be a host copy in the graph.
  error_flag_ = std::make_shared<DeviceBuffer>(*device_, sizeof(int64_t));
  const int64_t zero = 0;
  device_->upload(error_flag_->data, &zero, sizeof zero);
}

int64_t DeviceVm::index_site(const SourceLoc& loc, const std::string& what) {
  auto key = std::make_pair(loc.str(), what);
  auto [it, fresh] = index_sites_.try_emplace(key, static_cast<int64_t>(site_messages_.size()) + 1);
  if (fresh) site_messages_.emplace_back(loc, what);
  return it->second;
}

void DeviceVm::check_device_errors() {
  int64_t code = 0;
  device_->download(&code, error_flag_->data, sizeof code);
  if (code == 0) return;
  const int64_t zero = 0;
  device_->upload(error_flag_->data, &zero, sizeof zero);
  const auto& [loc, what] = site_messages_[static_cast<size_t>((code >> 40) - 1)];
  throw UserError(
      loc, fmt::format("{}: element {} of the indices", what, code & ((int64_t{1} << 40) - 1)));
}

DeviceVm::~DeviceVm() {
  captured_.clear();
  workspaces_.clear();
  programs_.clear();
}

std::shared_ptr<DeviceBuffer> DeviceVm::new_buffer(int64_t bytes) {
  auto buffer = std::make_shared<DeviceBuffer>(*device_, bytes);
  if (capturing_) capture_buffers_.push_back(buffer);
  return buffer;
}

DeviceTensor DeviceVm::allocate(DType dtype, const Shape& shape) {
  DeviceTensor t;
  t.dtype = dtype;
  t.shape = shape;
  t.buffer = new_buffer(numel(shape) * dtype_bytes(dtype));
  return t;
}

DeviceTensor DeviceVm::converted(const DeviceTensor& t, DType dtype) {
  if (t.dtype == dtype) return t;
  DeviceTensor out = allocate(dtype, t.shape);
  weft_dk_map_args a = identity_map(t, out.data(), dtype, t.shape);
  launch("weft_dk_map_launch", a);
  return out;
}

DeviceValue DeviceVm::upload(const VmValue& value, const MType& type) {
  if (const VmTuple* tu = value.tuple()) {
    auto out = std::make_shared<DeviceTuple>();
    for (size_t i = 0; i < tu->size(); ++i)
      out->push_back(upload((*tu)[i], i < type.fields.size() ? type.fields[i] : MType{}));
    return DeviceValue{std::shared_ptr<const DeviceTuple>(std::move(out))};
  }
  if (auto* i = std::get_if<int64_t>(&value.v)) return DeviceValue{*i};
  const Tensor<double>* t = value.tensor();
  WEFT_CHECK(t != nullptr, "uploading a value that is no tensor, tuple or integer");
  std::vector<float> f(t->data.begin(), t->data.end());
  DeviceTensor d = allocate(type.is_tensor() ? type.dtype : DType::f32, t->shape);
  std::vector<uint8_t> bytes = encode_as(f.data(), f.size(), d.dtype);
  device_->upload(d.data(), bytes.data(), static_cast<int64_t>(bytes.size()));
  stats_.uploaded_bytes += static_cast<int64_t>(bytes.size());
  return DeviceValue{d};
}

VmValue DeviceVm::download(const DeviceValue& value) {
  if (const DeviceTuple* tu = value.tuple()) {
    auto out = std::make_shared<VmTuple>();
    for (const DeviceValue& x : *tu) out->push_back(download(x));
    return VmValue{std::shared_ptr<const VmTuple>(std::move(out))};
  }
  if (auto* i = std::get_if<int64_t>(&value.v)) return VmValue{*i};
  const DeviceTensor* t = value.tensor();
  WEFT_CHECK(t != nullptr, "downloading an empty value");
  std::vector<uint8_t> bytes(static_cast<size_t>(numel(t->shape) * dtype_bytes(t->dtype)));
  device_->download(bytes.data(), t->data(), static_cast<int64_t>(bytes.size()));
  stats_.downloaded_bytes += static_cast<int64_t>(bytes.size());
  std::vector<float> f(static_cast<size_t>(numel(t->shape)));
  decode_from(bytes.data(), f.size(), t->dtype, f.data());
  return VmValue{
      std::make_shared<const Tensor<double>>(t->shape, std::vector<double>(f.begin(), f.end()))};
}

VmValue DeviceVm::run_host(const std::string& name, const std::vector<VmValue>& args) {
  const Function& fn = *vm_.compiled(name).fn;
  if (args.size() != fn.params.size())
    throw UserError(fn.loc, fmt::format("function '{}' takes {} arguments, got {}", fn.name,
                                        fn.params.size(), args.size()));
  std::vector<DeviceValue> dev;
  for (size_t i = 0; i < args.size(); ++i) dev.push_back(upload(args[i], fn.params[i].type));
  return download(run(name, dev));
}

namespace {

// vm_match checks shapes only: a placeholder host value of the device value's shape.
VmValue shape_view(const DeviceValue& x) {
  if (const DeviceTensor* t = x.tensor()) return VmValue{VmSlot{nullptr, 0, t->shape}};
  if (const DeviceTuple* tu = x.tuple()) {
    auto out = std::make_shared<VmTuple>();
    for (const DeviceValue& y : *tu) out->push_back(shape_view(y));
    return VmValue{std::shared_ptr<const VmTuple>(std::move(out))};
  }
  if (auto* i = std::get_if<int64_t>(&x.v)) return VmValue{*i};
  return VmValue{};
}

}  // namespace

// A call's frame on the device: registers hold device values (aliases of buffers; a buffer lives
// while a value refers to it), without a memory plan.
struct DeviceVm::Frame {
  using Value = DeviceValue;
  DeviceVm& vm;
  int depth = 0;

  void match(const MType& type, const DeviceValue& v, SymBinding& heap, const std::string& what,
             const SourceLoc& loc) {
    vm_match(type, shape_view(v), heap, what, loc);
  }
  void step() {}
  void alloc(const VmInstr&, const SymBinding&) { no_plan(); }
  void release(const VmInstr&) { no_plan(); }
  DeviceValue call(const VmInstr& in, const std::vector<DeviceValue>& regs,
                   const SymBinding& heap) {
    std::vector<const DeviceValue*> operands;
    for (int a : in.args) operands.push_back(&regs[static_cast<size_t>(a)]);
    return vm.execute(*in.binding, operands, heap, depth);
  }
  void hold(int, const DeviceValue&) {}
  void drop(int, const DeviceValue&, bool) {}
  DeviceValue moved(const DeviceValue& v) { return v; }
  DeviceValue returned(int, const DeviceValue& v) { return v; }

 private:
  [[noreturn]] static void no_plan() {
    WEFT_FAIL("the device executor runs without a memory plan");
  }
};

DeviceValue DeviceVm::call_function(const VmFunction& f, const std::vector<DeviceValue>& args,
                                    int depth) {
  Frame frame{*this, depth};
  return run_register_program(f, args, depth, frame);
}

DeviceValue DeviceVm::execute(const Binding& b, const std::vector<const DeviceValue*>& in,
                              const SymBinding& heap, int depth) {
  const Call& c = b.call;
  std::vector<const DeviceTensor*> tensors;
  auto require_tensors = [&] {
    for (size_t i = 0; i < in.size(); ++i) {
      tensors.push_back(in[i]->tensor());
      if (!tensors.back()) throw UserError(c.loc, fmt::format("operand {} is not a tensor", i + 1));
    }
  };
  switch (c.kind) {
    case CallKind::op:
      require_tensors();
      return run_op(b, tensors, heap);
    case CallKind::lib:
      require_tensors();
      return host_fallback(b, tensors, heap);
    case CallKind::ugraph:
      require_tensors();
      return run_ugraph(b, tensors);
    case CallKind::func: {
      std::vector<DeviceValue> args;
      for (const DeviceValue* v : in) args.push_back(*v);
      return call_function(vm_.compiled(c.callee), args, depth + 1);
    }
    case CallKind::tuple: {
      auto tu = std::make_shared<DeviceTuple>();
      for (const DeviceValue* v : in) tu->push_back(*v);
      return DeviceValue{std::shared_ptr<const DeviceTuple>(std::move(tu))};
    }
    case CallKind::item: {
      const DeviceTuple* tu = in[0]->tuple();
      auto i = std::get<SymExpr>(c.attrs.at("index")).as_constant();
      WEFT_CHECK(tu && i && *i >= 0 && static_cast<size_t>(*i) < tu->size(),
                 "bad item at run time");
      return (*tu)[static_cast<size_t>(*i)];
    }
    case CallKind::match_cast:
    case CallKind::if_:
      break;
  }
  WEFT_FAIL("{} reached execute", call_kind_name(c.kind));
}

const Program& DeviceVm::ugraph_program(const Graph& g) {
  auto& program = programs_[&g];
  if (!program)
    program = compile_program(g, backend_target(backend(), options_.gpu_target), backend(),
                              options_.build);
  return *program;
}

DeviceValue DeviceVm::run_ugraph(const Binding& b, const std::vector<const DeviceTensor*>& in) {
  const Call& c = b.call;
  const Graph& g = *vm_.module().find_ugraph(c.callee)->graph;
  std::vector<Shape> shapes;
  for (const DeviceTensor* t : in) shapes.push_back(t->shape);
  try {
    check_input_shapes(g, shapes);
  } catch (const UserError& e) {
    throw UserError(c.loc, fmt::format("call_ugraph {}: {}", c.callee, e.message()));
  }
  const Program& p = ugraph_program(g);
  const ProgramPlan& plan = p.plan();
  // Operands in the plan's input dtypes (a copy only where the model's dtype differs).
  std::vector<DeviceTensor> inputs;
  std::vector<void*> in_ptrs, out_ptrs;
  for (size_t i = 0; i < in.size(); ++i) {
    inputs.push_back(converted(*in[i], plan.find_tensor(plan.inputs[i])->dtype));
    in_ptrs.push_back(inputs.back().data());
  }
  std::vector<DeviceTensor> outs;
  for (const std::string& name : plan.outputs) {
    const PlanBuffer* t = plan.find_tensor(name);
    outs.push_back(allocate(t->dtype, t->shape));
    out_ptrs.push_back(outs.back().data());
  }
  auto& ws = workspaces_[&p];
  if (!ws && plan.workspace_bytes > 0) ws = new_buffer(plan.workspace_bytes);
  device_->enqueue([&p, in_ptrs, out_ptrs, workspace = ws ? ws->data : nullptr](void* stream) {
    p.launch_raw(in_ptrs.data(), out_ptrs.data(), workspace, stream);
  });
  ++stats_.ugraph_launches;
  // Each output in the dtype the module gives it.
  std::vector<DType> want;
  if (b.type.kind == MTypeKind::tuple)
    for (const MType& f : b.type.fields) want.push_back(f.dtype);
  else
    want.push_back(b.type.dtype);
  for (size_t i = 0; i < outs.size() && i < want.size(); ++i) outs[i] = converted(outs[i], want[i]);
  if (outs.size() == 1) return DeviceValue{outs[0]};
  auto tu = std::make_shared<DeviceTuple>();
  for (DeviceTensor& t : outs) tu->push_back(DeviceValue{std::move(t)});
  return DeviceValue{std::shared_ptr<const DeviceTuple>(std::move(tu))};
}

DeviceValue DeviceVm::host_fallback(const Binding& b, const std::vector<const DeviceTensor*>& in,
                                    const SymBinding& heap) {
  if (capturing_) throw NotCapturable{};
  ++stats_.host_fallbacks;
  ++stats_.host_fallback_ops[b.call.callee];
  std::vector<VmValue> host;
  std::vector<const Tensor<double>*> tensors;
  for (const DeviceTensor* t : in) host.push_back(download(DeviceValue{*t}));
  for (const VmValue& v : host) tensors.push_back(v.tensor());
  return upload(run_operator_on_host(b, tensors, heap), b.type);
}

DeviceValue DeviceVm::run_op(const Binding& b, const std::vector<const DeviceTensor*>& in,
                             const SymBinding& heap) {
  const Call& c = b.call;
  const OpKind kind = *op_by_name(c.callee);
  Attrs attrs = evaluate_attrs(c.attrs, heap, c.loc);
  // The result's shape and dtype, from the deduced type at this frame's variables.
  Shape out_shape;
  // split's result is a tuple of parts whose shape it computes from its operand.
  const bool split = kind == OpKind::split;
  bool known = split || (b.type.is_tensor() && b.type.dims.has_value());
  if (known && !split)
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
  const DType dtype = b.type.dtype;
  static const DeviceTensor kNoOperand;  // fill, range and dims_tensor take none
  const DeviceTensor& x = in.empty() ? kNoOperand : *in[0];
  auto fresh = [&] { return allocate(dtype, out_shape); };
  auto rows = [&](int kind_code, int64_t dim, int64_t to, float k) {
    DeviceTensor out = fresh();
    weft_dk_rows_args a{};
    a.in = x.data();
    a.out = out.data();
    a.in_dtype = dtype_code(x.dtype);
    a.out_dtype = dtype_code(dtype);
    a.kind = kind_code;
    a.n = x.shape[static_cast<size_t>(dim)];
    a.inner = 1;
    for (size_t d = static_cast<size_t>(dim) + 1; d < x.shape.size(); ++d) a.inner *= x.shape[d];
    a.outer = numel(x.shape) / std::max<int64_t>(a.n * a.inner, 1);
    a.to = to;
    a.k = k;
    launch("weft_dk_rows_launch", a);
    return DeviceValue{out};
  };
  auto map = [&](const std::function<void(weft_dk_map_args&)>& edit) {
    DeviceTensor out = fresh();
    weft_dk_map_args a = identity_map(x, out.data(), dtype, out_shape);
    edit(a);
    launch("weft_dk_map_launch", a);
    return DeviceValue{out};
  };
  auto in_strides = strides_of(x.shape);
  switch (kind) {
    WEFT_CASES_UNARY
    WEFT_CASES_BINARY
    case OpKind::where:
    case OpKind::pow:
    case OpKind::abs:
    case OpKind::reciprocal:
    case OpKind::log:
    case OpKind::gelu_tanh:
    case OpKind::clip:
    case OpKind::cast: {
      WEFT_CHECK(device_scalar_form(kind) != nullptr, "{} has no device scalar form", c.callee);
      DeviceTensor out = fresh();
      weft_dk_elementwise_args a{};
      a.out = out.data();
      a.out_dtype = dtype_code(dtype);
      a.operands = static_cast<int>(in.size());
      a.rank = static_cast<int>(out_shape.size());
      a.op = static_cast<int>(kind);
      a.numel = numel(out_shape);
      const AttrSpec* k = rational_attr(op_info(kind));
      a.k = k ? static_cast<float>(attrs.get_rational(k->name).to_double()) : 0.0f;
      if (kind == OpKind::clip) a.k2 = static_cast<float>(attrs.get_rational("max").to_double());
      if (kind == OpKind::cast) {
        const CastTarget* t = cast_target(attrs.get_int("to"));
        if (!t)
          throw UserError(c.loc,
                          fmt::format("cast to={} is not a dtype code", attrs.get_int("to")));
        a.k = t->kind == CastTarget::boolean ? 1.0f
              : t->kind == CastTarget::sint  ? 2.0f
              : t->kind == CastTarget::uint  ? 3.0f
                                             : 0.0f;
        a.k2 = static_cast<float>(t->bits);
      }
      for (size_t d = 0; d < out_shape.size(); ++d) a.dims[d] = out_shape[d];
      for (size_t j = 0; j < in.size(); ++j) {
        a.in[j] = in[j]->data();
        a.in_dtype[j] = dtype_code(in[j]->dtype);
        auto st = broadcast_strides(in[j]->shape, out_shape);
        for (size_t d = 0; d < st.size(); ++d) a.stride[j][d] = st[d];
      }
      launch("weft_dk_elementwise_launch", a);
      return DeviceValue{out};
    }
      WEFT_CASES_MATMUL {
        const DeviceTensor& y = *in[1];
        DeviceTensor out = fresh();
        weft_dk_matmul_args a{};
        a.a = x.data();
        a.b = y.data();
        a.out = out.data();
        a.a_dtype = dtype_code(x.dtype);
        a.b_dtype = dtype_code(y.dtype);
        a.out_dtype = dtype_code(dtype);
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
    case OpKind::sum:
    case OpKind::mean:
    case OpKind::max:
      return rows(kind == OpKind::sum    ? 0
                  : kind == OpKind::mean ? 1
                                         : 2,
                  normalized(attrs.get_int("dim"), x.shape.size()), attrs.get_int("to"), 0.0f);
    case OpKind::softmax_safe:
      return rows(3, normalized(attrs.get_int("dim"), x.shape.size()), 1, 0.0f);
    case OpKind::layer_norm:
      return rows(4, static_cast<int64_t>(x.shape.size()) - 1, 1,
                  static_cast<float>(attrs.get_rational("eps").to_double()));
    case OpKind::reshape: {
      // Same elements in the same order: the buffer, seen with the new shape.
      DeviceTensor out = converted(x, dtype);
      out.shape = out_shape;
      return DeviceValue{out};
    }
    case OpKind::permute: {
      const auto& perm = attrs.get_list("perm");
      return map([&](weft_dk_map_args& a) {
        for (size_t d = 0; d < out_shape.size(); ++d)
          a.in_stride[d] = in_strides[static_cast<size_t>(normalized(perm[d], x.shape.size()))];
      });
    }
    case OpKind::slice: {
      auto dim = static_cast<size_t>(normalized(attrs.get_int("dim"), x.shape.size()));
      int64_t start = attrs.get_int("start"), size = attrs.get_int("size");
      if (start < 0 || size < 0 || start > x.shape[dim] - size)
        throw UserError(c.loc, fmt::format("slice [{}, {}) of dim {} is outside its extent {}",
                                           start, start + size, dim, x.shape[dim]));
      return map([&](weft_dk_map_args& a) {
        for (size_t d = 0; d < out_shape.size(); ++d) a.in_stride[d] = in_strides[d];
        a.start[dim] = start;
      });
    }
    case OpKind::expand:
      return map([&](weft_dk_map_args& a) {
        auto st = broadcast_strides(x.shape, out_shape);
        for (size_t d = 0; d < out_shape.size(); ++d) a.in_stride[d] = st[d];
      });
    case OpKind::repeat: {
      auto dim = static_cast<size_t>(normalized(attrs.get_int("dim"), x.shape.size()));
      return map([&](weft_dk_map_args& a) {
        for (size_t d = 0; d < out_shape.size(); ++d) a.in_stride[d] = in_strides[d];
        a.mod[dim] = x.shape[dim];
      });
    }
    case OpKind::concat: {
      auto dim = static_cast<size_t>(normalized(attrs.get_int("dim"), x.shape.size()));
      DeviceTensor out = fresh();
      auto os = strides_of(out_shape);
      int64_t at = 0;
      for (const DeviceTensor* t : in) {
        weft_dk_map_args a = identity_map(*t, out.data(), dtype, t->shape);
        for (size_t d = 0; d < os.size(); ++d) a.out_stride[d] = os[d];
        a.out_offset = at * os[dim];
        at += t->shape[dim];
        if (a.numel > 0) launch("weft_dk_map_launch", a);
      }
      return DeviceValue{out};
    }
    case OpKind::gather:
    case OpKind::embedding: {
      const DeviceTensor& ids = *in[1];
      DeviceTensor out = fresh();
      weft_dk_gather_args a{};
      a.x = x.data();
      a.ids = ids.data();
      a.out = out.data();
      a.x_dtype = dtype_code(x.dtype);
      a.ids_dtype = dtype_code(ids.dtype);
      a.out_dtype = dtype_code(dtype);
      auto axis = static_cast<size_t>(
          kind == OpKind::gather ? normalized(attrs.get_int("axis"), x.shape.size()) : 0);
      a.extent = x.shape[axis];
      a.lowest = kind == OpKind::gather ? -a.extent : 0;
      a.count = numel(ids.shape);
      a.error = static_cast<int64_t*>(error_flag_->data);
      a.site = index_site(
          c.loc, kind == OpKind::gather
                     ? fmt::format("gather index out of range for dim {} of extent {} (valid: "
                                   "{}..{}), or not an integer",
                                   axis, a.extent, -a.extent, a.extent - 1)
                     : fmt::format("embedding index not an integer in [0, {})", a.extent));
      a.outer = 1;
      a.inner = 1;
      for (size_t d = 0; d < axis; ++d) a.outer *= x.shape[d];
      for (size_t d = axis + 1; d < x.shape.size(); ++d) a.inner *= x.shape[d];
      launch("weft_dk_gather_launch", a);
      return DeviceValue{out};
    }
    case OpKind::split: {
      auto dim = static_cast<size_t>(normalized(attrs.get_int("dim"), x.shape.size()));
      const int64_t parts = attrs.get_int("parts");
      WEFT_CHECK(parts >= 1 && x.shape[dim] % parts == 0, "split's parts were not checked");
      Shape part = x.shape;
      part[dim] /= parts;
      auto tu = std::make_shared<DeviceTuple>();
      for (int64_t i = 0; i < parts; ++i) {
        DeviceTensor out = allocate(dtype, part);
        weft_dk_map_args a = identity_map(x, out.data(), dtype, part);
        for (size_t d = 0; d < part.size(); ++d) a.in_stride[d] = in_strides[d];
        a.start[dim] = i * part[dim];
        if (a.numel > 0) launch("weft_dk_map_launch", a);
        tu->push_back(DeviceValue{std::move(out)});
      }
      return DeviceValue{std::shared_ptr<const DeviceTuple>(std::move(tu))};
    }
    case OpKind::slice_steps: {
      Shape shape;
      auto take = slice_steps_take(x.shape, attrs, shape);
      WEFT_CHECK(shape == out_shape, "slice_steps' deduced shape differs at run time");
      return map([&](weft_dk_map_args& a) {
        for (size_t d = 0; d < out_shape.size(); ++d) {
          a.in_stride[d] = in_strides[d];
          a.start[d] = take[d].first;
          a.step[d] = take[d].second;
        }
      });
    }
    case OpKind::tile:
      return map([&](weft_dk_map_args& a) {
        for (size_t d = 0; d < out_shape.size(); ++d) {
          a.in_stride[d] = in_strides[d];
          a.mod[d] = std::max<int64_t>(x.shape[d], 1);
        }
      });
    case OpKind::pad: {
      const auto& pads = attrs.get_list("pads");
      return map([&](weft_dk_map_args& a) {
        a.fill = static_cast<float>(attrs.get_rational("value").to_double());
        for (size_t d = 0; d < out_shape.size(); ++d) {
          a.in_stride[d] = in_strides[d];
          a.start[d] = -pads[d];  // negative pads crop
          a.bound[d] = x.shape[d];
        }
      });
    }
    case OpKind::rope:
    case OpKind::causal_mask: {
      DeviceTensor out = fresh();
      weft_dk_position_args a{};
      a.in = x.data();
      a.out = out.data();
      a.in_dtype = dtype_code(x.dtype);
      a.out_dtype = dtype_code(dtype);
      a.kind = kind == OpKind::rope ? 0 : 1;
      a.numel = numel(x.shape);
      a.rows = x.shape[x.shape.size() - 2];
      a.cols = x.shape.back();
      a.offset = attrs.get_int("offset");
      a.theta =
          kind == OpKind::rope ? static_cast<float>(attrs.get_rational("theta").to_double()) : 0.0f;
      if (a.numel > 0) launch("weft_dk_position_launch", a);
      return DeviceValue{out};
    }
    case OpKind::fill:
    case OpKind::range:
    case OpKind::dims_tensor: {
      if (kind == OpKind::dims_tensor && out_shape[0] > WEFT_DK_MAX_RANK)
        return host_fallback(b, in, heap);
      DeviceTensor out = fresh();
      weft_dk_generate_args a{};
      a.out = out.data();
      a.out_dtype = dtype_code(dtype);
      a.numel = numel(out_shape);
      if (kind == OpKind::fill) {
        a.value = static_cast<float>(attrs.get_rational("value").to_double());
      } else if (kind == OpKind::range) {
        a.kind = 1;
        a.start = attrs.get_int("start");
        a.delta = attrs.get_int("delta");
      } else {
        a.kind = 2;
        const auto& values = attrs.get_list("values");
        std::copy(values.begin(), values.end(), a.values);
      }
      if (a.numel > 0) launch("weft_dk_generate_launch", a);
      return DeviceValue{out};
    }
    case OpKind::global_avg_pool:
    case OpKind::global_max_pool: {
      DeviceTensor out = fresh();
      weft_dk_rows_args a{};
      a.in = x.data();
      a.out = out.data();
      a.in_dtype = dtype_code(x.dtype);
      a.out_dtype = dtype_code(dtype);
      a.kind = kind == OpKind::global_avg_pool ? 1 : 2;
      a.outer = x.shape[0] * x.shape[1];
      a.n = numel(x.shape) / std::max<int64_t>(a.outer, 1);
      a.inner = 1;
      a.to = 1;
      if (a.outer > 0) launch("weft_dk_rows_launch", a);
      return DeviceValue{out};
    }
    case OpKind::conv:
    case OpKind::max_pool:
    case OpKind::avg_pool:
    case OpKind::max_pool_indices:
    case OpKind::lrn:
      return window_op(kind, in, attrs, out_shape, dtype, c.loc);
      // Expanded before the VM compiles a function, or never in a model function.
      WEFT_CASES_COMPOSITE
      WEFT_CASES_STRUCTURE
      WEFT_CASES_HIERARCHY
    case OpKind::attention:
      break;
  }
  WEFT_FAIL("{} reached the device executor", c.callee);
}

DeviceValue DeviceVm::window_op(OpKind kind, const std::vector<const DeviceTensor*>& in,
                                const Attrs& attrs, const Shape& out_shape, DType dtype,
                                const SourceLoc& loc) {
  const DeviceTensor& x = *in[0];
  DeviceTensor out = allocate(dtype, out_shape);
  weft_dk_window_args a{};
  a.x = x.data();
  a.out = out.data();
  a.x_dtype = dtype_code(x.dtype);
  a.out_dtype = dtype_code(dtype);
  a.n = x.shape[0];
  a.c = x.shape[1];
  a.group = 1;
  auto geometry = [&](const std::vector<int64_t>& kernel, bool ceil_mode, const char* op) {
    Windows3 w;
    try {
      w = concrete_windows(x.shape, kernel, attrs, ceil_mode, op);
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
  // conv, the pools and lrn only (run_op's switch sends no other kind here).
  if (kind == OpKind::conv) {
    const DeviceTensor& wt = *in[1];
    a.kind = 0;
    a.w = wt.data();
    a.w_dtype = dtype_code(wt.dtype);
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
    a.kind = kind == OpKind::max_pool ? 1 : kind == OpKind::avg_pool ? 2 : 3;
    a.include_pad = kind == OpKind::avg_pool && attrs.get_int("count_include_pad") == 1;
    geometry(attrs.get_list("kernel"), attrs.get_int("ceil_mode") == 1,
             kind == OpKind::avg_pool ? "avg_pool" : "max_pool");
  }
  if (numel(out_shape) > 0) launch("weft_dk_window_launch", a);
  return DeviceValue{out};
}

}  // namespace weft
