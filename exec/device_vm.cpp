// The device-resident model executor: the VM's instructions over device values, operators run by
// the model kernel library (device_vm_ops.cpp), host fallbacks counted, CUDA graphs per binding.
#include "exec/device_vm.h"

#include <fmt/format.h>

#include "core/dtype_convert.h"
#include "exec/register_program.h"
#include "interp/interpreter.h"
#include "model/library.h"

namespace weft {

void* DeviceTensor::data() const {
  return static_cast<uint8_t*>(buffer->data) + offset * dtype_bytes(dtype);
}

const DeviceTuple* DeviceValue::tuple() const {
  auto* p = std::get_if<std::shared_ptr<const DeviceTuple>>(&v);
  return p ? p->get() : nullptr;
}

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
  if (trace_) trace_->buffers.push_back(buffer);
  return buffer;
}

void DeviceVm::record_launch(const char* kernel, const void* args, size_t bytes) {
  TracedLaunch l;
  l.kernel = kernel;
  const auto* p = static_cast<const unsigned char*>(args);
  l.args.assign(p, p + bytes);
  l.op = trace_op_;
  l.var = trace_var_;
  trace_->launches.push_back(std::move(l));
}

DeviceTrace DeviceVm::trace(const std::string& name, const std::vector<DeviceValue>& args,
                            DeviceValue* result) {
  WEFT_CHECK(!trace_ && !capturing_, "a trace inside a trace or a capture");
  DeviceTrace t;
  t.error_flag = error_flag_->data;
  trace_ = &t;
  try {
    DeviceValue r = call_function(vm_.compiled(name), args, 0);
    trace_ = nullptr;
    check_device_errors();
    if (result) *result = std::move(r);
  } catch (...) {
    trace_ = nullptr;
    throw;
  }
  ++stats_.runs;
  return t;
}

DeviceTensor DeviceVm::allocate(DType dtype, const Shape& shape) {
  DeviceTensor t;
  t.dtype = dtype;
  t.shape = shape;
  t.buffer = new_buffer(numel(shape) * dtype_bytes(dtype));
  return t;
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
  DeviceTensor d = allocate(type.is_tensor() ? type.dtype : DType::f32, t->shape);
  std::vector<uint8_t> bytes = encode_values(t->data.data(), t->data.size(), d.dtype);
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
  auto out = std::make_shared<Tensor<double>>(t->shape, 0.0);
  decode_values(bytes.data(), out->data.size(), t->dtype, out->data.data());
  return VmValue{std::shared_ptr<const Tensor<double>>(std::move(out))};
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
  if (const DeviceTensor* t = x.tensor()) {
    VmSlot placeholder;
    placeholder.shape = t->shape;
    return VmValue{std::move(placeholder)};
  }
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
      return run_op(b, op_info(*op_by_name(c.callee)), tensors, heap);
    case CallKind::lib: {
      require_tensors();
      // A library function runs as the table operator whose rule it follows where that has a
      // device kernel (cpu.gemm: the matmul kernel), else on the host.
      const LibFunction* f = lib_function_by_name(c.callee);
      if (f && op_info(f->shape_like).device != DeviceKernel::none)
        return run_op(b, op_info(f->shape_like), tensors, heap);
      return host_fallback(b, tensors, heap);
    }
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
  if (trace_) {
    TracedLaunch l;
    l.var = b.var;
    l.program = &p;
    l.inputs.assign(in_ptrs.begin(), in_ptrs.end());
    l.outputs.assign(out_ptrs.begin(), out_ptrs.end());
    l.workspace = ws ? ws->data : nullptr;
    // A workspace made before the trace (an earlier run's) is the trace's buffer too.
    if (ws &&
        std::find(trace_->buffers.begin(), trace_->buffers.end(), ws) == trace_->buffers.end())
      trace_->buffers.push_back(ws);
    trace_->launches.push_back(std::move(l));
  }
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
  if (trace_) ++trace_->host_fallbacks[b.call.callee];
  ++stats_.host_fallbacks;
  ++stats_.host_fallback_ops[b.call.callee];
  std::vector<VmValue> host;
  std::vector<const Tensor<double>*> tensors;
  for (const DeviceTensor* t : in) host.push_back(download(DeviceValue{*t}));
  for (const VmValue& v : host) tensors.push_back(v.tensor());
  return upload(run_operator_on_host(b, tensors, heap), b.type);
}

}  // namespace weft
