// The model VM: compilation of functions to register programs (with frees after last uses), their
// disassembly, and the operators, µGraphs and callees their calls execute on the host.
#include "exec/vm.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <set>

#include "core/system_memory.h"
#include "cpulib/cpu_library.h"
#include "exec/channels_last.h"
#include "exec/host_elementwise.h"
#include "exec/host_movement.h"
#include "interp/interpreter.h"
#include "interp/real_domain.h"
#include "model/expand.h"
#include "model/library.h"
#include "model/model_ops.h"
#include "runtime/cpu_program.h"

namespace weft {

const Tensor<double>* VmValue::tensor() const {
  auto* p = std::get_if<std::shared_ptr<const Tensor<double>>>(&v);
  return p ? p->get() : nullptr;
}
const Tensor<float>* VmValue::tensor_f32() const {
  auto* p = std::get_if<std::shared_ptr<const Tensor<float>>>(&v);
  return p ? p->get() : nullptr;
}
const VmTuple* VmValue::tuple() const {
  auto* p = std::get_if<std::shared_ptr<const VmTuple>>(&v);
  return p ? p->get() : nullptr;
}
const VmSlot* VmValue::slot() const {
  return std::get_if<VmSlot>(&v);
}

VmValue with_f64_tensors(const VmValue& v) {
  if (const Tensor<float>* t = v.tensor_f32())
    return VmValue{std::make_shared<const Tensor<double>>(
        t->shape, std::vector<double>(t->data.begin(), t->data.end()))};
  const VmTuple* tu = v.tuple();
  if (!tu) return v;
  auto out = std::make_shared<VmTuple>();
  for (const VmValue& x : *tu) out->push_back(with_f64_tensors(x));
  return VmValue{std::shared_ptr<const VmTuple>(std::move(out))};
}

namespace {

// The shape of a tensor, in planned storage or not; null for other values.
const Shape* tensor_shape(const VmValue& v) {
  if (const Tensor<double>* t = v.tensor()) return &t->shape;
  if (const Tensor<float>* t = v.tensor_f32()) return &t->shape;
  if (const VmSlot* s = v.slot()) return &s->shape;
  return nullptr;
}

std::string kind_str(const VmValue& v) {
  if (const Shape* s = tensor_shape(v)) return "a tensor of shape " + shape_str(*s);
  if (v.tuple()) return fmt::format("a tuple of {}", v.tuple()->size());
  return "an integer";
}

// The variable that `e` is when it stands alone, or null.
const SymAtom* bare_var(const SymExpr& e) {
  const SymAtom* a = e.as_atom();
  return a && a->kind == SymAtomKind::var ? a : nullptr;
}

void match_expr(const SymExpr& e, int64_t actual, SymBinding& heap, const std::string& what,
                const SourceLoc& loc) {
  if (const SymAtom* v = bare_var(e); v && !heap.count(v->name)) {
    if (actual < v->lo || (v->hi && actual > *v->hi))
      throw UserError(loc, fmt::format("{}: {} = {} is outside its bounds {}", what, v->name,
                                       actual, SymVar(v->name, v->lo, v->hi).decl_str()));
    heap[v->name] = actual;
    return;
  }
  SymEvalResult r = try_evaluate(e, heap);
  if (!r.value)
    throw UserError(loc, fmt::format("{}: {} cannot be evaluated: {}", what, e.str(), r.error));
  if (*r.value != actual) {
    std::string vars;
    if (!bare_var(e)) vars = fmt::format(" (with {})", binding_str(heap));
    throw UserError(loc, fmt::format("{}: expected {} = {}{}, but the value has {}", what, e.str(),
                                     *r.value, vars, actual));
  }
}

}  // namespace

void vm_match(const MType& type, const VmValue& value, SymBinding& heap, const std::string& what,
              const SourceLoc& loc) {
  switch (type.kind) {
    case MTypeKind::tensor:
    case MTypeKind::shape: {
      const Shape* shape = tensor_shape(value);
      if (!shape)
        throw UserError(loc,
                        fmt::format("{}: expected {}, got {}", what, type.str(), kind_str(value)));
      if (static_cast<int>(shape->size()) != type.rank)
        throw UserError(loc, fmt::format("{}: expected {} (rank {}), got a tensor of shape {}",
                                         what, type.str(), type.rank, shape_str(*shape)));
      if (type.dims)
        for (size_t i = 0; i < shape->size(); ++i) {
          const SymExpr& d = (*type.dims)[i];
          // A constant dim (a weight's, a specialized function's) needs no evaluation.
          if (std::optional<int64_t> c = d.as_constant(); c && *c == (*shape)[i]) continue;
          match_expr(d, (*shape)[i], heap, fmt::format("{}, dim {}", what, i), loc);
        }
      return;
    }
    case MTypeKind::tuple: {
      const VmTuple* tu = value.tuple();
      if (!tu || tu->size() != type.fields.size())
        throw UserError(loc,
                        fmt::format("{}: expected {}, got {}", what, type.str(), kind_str(value)));
      for (size_t i = 0; i < tu->size(); ++i)
        vm_match(type.fields[i], (*tu)[i], heap, fmt::format("{}, field {}", what, i), loc);
      return;
    }
    case MTypeKind::integer: {
      auto* i = std::get_if<int64_t>(&value.v);
      if (!i)
        throw UserError(loc, fmt::format("{}: expected an integer, got {}", what, kind_str(value)));
      if (type.value) match_expr(*type.value, *i, heap, what, loc);
      return;
    }
  }
}

namespace {
Module expanded(const Module& module) {
  SymProver prover;
  return expand_composites(module, prover);
}
}  // namespace

Vm::Vm(const Module& module_in, VmOptions options)
    : module_(expanded(module_in)), options_(std::move(options)) {
  memory_limit_ =
      options_.memory_limit_bytes > 0 ? options_.memory_limit_bytes : physical_memory_bytes();
  const Module& module = module_;
  if (options_.plan && options_.given_plan) {
    WEFT_CHECK(options_.given_plan->element_bytes == sizeof(double),
               "a VM plan must count 8-byte elements");
    plan_ = *options_.given_plan;
  } else if (options_.plan) {
    SymProver prover;
    PlanOptions po;
    po.element_bytes = sizeof(double);  // the VM's tensors hold f64 values
    plan_ = plan_memory(module, prover, po);
  }
  for (const Function& f : module.functions) {
    VmFunction vf;
    vf.fn = &f;
    vf.plan = options_.plan ? plan_.find(f.name) : nullptr;
    std::map<std::string, int> reg;
    for (const Param& p : f.params) reg.emplace(p.name, static_cast<int>(reg.size()));
    std::vector<const Binding*> bindings;
    for (const Block& b : f.blocks)
      for (const Binding& x : b.bindings) bindings.push_back(&x);
    // One register per parameter and binding, the arms of ifs included.
    std::function<void(const Binding&)> number = [&](const Binding& b) {
      reg.emplace(b.var, static_cast<int>(reg.size()));
      vf.fresh.push_back(b.call.kind != CallKind::tuple && b.call.kind != CallKind::item &&
                         b.call.kind != CallKind::match_cast && !is_view(b.call));
      for (const IfBranch& arm : b.call.branches)
        for (const Binding& x : arm.bindings) number(x);
    };
    vf.fresh.assign(f.params.size(), false);
    for (const Param& p : f.params)
      vf.param_what.push_back(fmt::format("parameter '{}' of '{}'", p.name, f.name));
    vf.result_what = fmt::format("the result of '{}'", f.name);
    vf.channels_last = channels_last_layouts(f, options_.cpu_library);
    for (const Binding* b : bindings) number(*b);
    vf.num_registers = static_cast<int>(reg.size());
    vf.register_names.resize(reg.size());
    for (const auto& [name, r] : reg) vf.register_names[static_cast<size_t>(r)] = name;
    // The plan's storage allocations (symbolic plans: at their first tensor) and releases.
    vf.binding_allocs.assign(bindings.size(), {});
    std::vector<std::vector<int>> allocs_at(bindings.size()), releases_at(bindings.size());
    if (vf.plan) {
      for (size_t k = 0; k < vf.plan->allocs.size(); ++k) {
        const PlannedAlloc& a = vf.plan->allocs[k];
        vf.binding_allocs[static_cast<size_t>(a.binding)].push_back(static_cast<int>(k));
        if (a.placement == AllocPlacement::storage)
          releases_at[static_cast<size_t>(a.last_use)].push_back(static_cast<int>(k));
      }
      if (!vf.plan->is_static || !options_.static_arena)
        for (size_t s = 0; s < vf.plan->storages.size(); ++s)
          allocs_at[static_cast<size_t>(vf.plan->storages[s].first)].push_back(static_cast<int>(s));
    }
    auto emit = [&](VmInstr in) {
      vf.code.push_back(std::move(in));
      return vf.code.size() - 1;
    };
    // Frees after the last use within `body` of the registers in `owned` (and of results
    // nobody reads); `last_use` is by index in `body`.
    auto frees_after = [&](size_t i, const std::vector<int>& args, const Binding& b,
                           const std::map<int, int>& last_use) {
      std::vector<int> dead;
      for (int a : args)
        if (auto it = last_use.find(a); it != last_use.end() && it->second == static_cast<int>(i))
          dead.push_back(a);
      if (!last_use.count(reg.at(b.var))) dead.push_back(reg.at(b.var));
      std::sort(dead.begin(), dead.end());
      dead.erase(std::unique(dead.begin(), dead.end()), dead.end());
      for (int d : dead) emit({VmOpcode::free, d, -1, {}, nullptr});
    };
    auto last_uses = [&](const std::vector<const Binding*>& body, const std::set<int>& owned) {
      std::map<int, int> last_use;
      for (size_t i = 0; i < body.size(); ++i)
        for (const std::string& a : reads_of(body[i]->call))
          if (owned.count(reg.at(a))) last_use[reg.at(a)] = static_cast<int>(i);
      return last_use;
    };
    // An if: branch to the else arm when the condition fails; each arm ends by moving its
    // result into the if's register.
    std::function<void(const Binding&)> emit_if = [&](const Binding& b) {
      size_t branch = emit({VmOpcode::branch, -1, -1, {}, &b});
      size_t jump = 0;
      for (size_t a = 0; a < b.call.branches.size(); ++a) {
        const IfBranch& arm = b.call.branches[a];
        if (a == 1) {
          jump = emit({VmOpcode::jump, -1, -1, {}, nullptr});
          vf.code[branch].index = static_cast<int>(vf.code.size());
        }
        std::vector<const Binding*> body;
        std::set<int> owned;
        for (const Binding& x : arm.bindings) {
          body.push_back(&x);
          owned.insert(reg.at(x.var));
        }
        std::map<int, int> last_use = last_uses(body, owned);
        if (owned.count(reg.at(arm.result)))
          last_use[reg.at(arm.result)] = static_cast<int>(body.size());
        for (size_t i = 0; i < body.size(); ++i) {
          const Binding& x = *body[i];
          std::vector<int> args;
          for (const std::string& n : x.call.args) args.push_back(reg.at(n));
          if (!x.runtime_checks.empty()) emit({VmOpcode::check, -1, -1, {}, &x});
          if (x.call.kind == CallKind::if_)
            emit_if(x);
          else
            emit({x.call.kind == CallKind::match_cast ? VmOpcode::match_cast : VmOpcode::call,
                  reg.at(x.var), -1, args, &x, is_view(x.call)});
          std::vector<int> reads;
          for (const std::string& n : reads_of(x.call)) reads.push_back(reg.at(n));
          frees_after(i, reads, x, last_use);
        }
        emit({VmOpcode::move, reg.at(b.var), -1, {reg.at(arm.result)}, &b});
        if (owned.count(reg.at(arm.result)))
          emit({VmOpcode::free, reg.at(arm.result), -1, {}, nullptr});
      }
      vf.code[jump].index = static_cast<int>(vf.code.size());
    };
    // Last use of each register (the result's is the return: never freed before it).
    std::set<int> top;
    for (size_t p = 0; p < f.params.size(); ++p) top.insert(static_cast<int>(p));
    for (const Binding* b : bindings) top.insert(reg.at(b->var));
    std::map<int, int> last_use = last_uses(bindings, top);
    last_use[reg.at(f.result)] = static_cast<int>(bindings.size());
    emit({VmOpcode::bind_params, -1, -1, {}, nullptr});
    for (size_t p = 0; p < f.params.size(); ++p)
      if (!last_use.count(static_cast<int>(p)))
        emit({VmOpcode::free, static_cast<int>(p), -1, {}, nullptr});
    if (vf.plan && vf.plan->is_static && options_.static_arena && !vf.plan->storages.empty())
      emit({VmOpcode::alloc, -1, -1, {}, nullptr});
    for (size_t i = 0; i < bindings.size(); ++i) {
      const Binding* b = bindings[i];
      std::vector<int> args;
      for (const std::string& a : b->call.args) args.push_back(reg.at(a));
      if (!b->runtime_checks.empty()) emit({VmOpcode::check, -1, -1, {}, b});
      for (int s : allocs_at[i]) emit({VmOpcode::alloc, -1, s, {}, nullptr});
      if (b->call.kind == CallKind::if_)
        emit_if(*b);
      else
        emit({b->call.kind == CallKind::match_cast ? VmOpcode::match_cast : VmOpcode::call,
              reg.at(b->var), static_cast<int>(i), args, b, is_view(b->call)});
      for (int k : releases_at[i]) emit({VmOpcode::release, -1, k, {}, nullptr});
      std::vector<int> reads;
      for (const std::string& n : reads_of(b->call)) reads.push_back(reg.at(n));
      frees_after(i, reads, *b, last_use);
    }
    emit({VmOpcode::ret, reg.at(f.result), -1, {}, nullptr});
    functions_.emplace(f.name, std::move(vf));
  }
}

const VmFunction& Vm::compiled(const std::string& name) const {
  auto it = functions_.find(name);
  if (it == functions_.end()) throw UserError(fmt::format("the module has no function '{}'", name));
  return it->second;
}

std::string Vm::disassemble(const std::string& name) const {
  const VmFunction& f = compiled(name);
  std::string out;
  auto reg_name = [&](int r) { return f.register_names[static_cast<size_t>(r)]; };
  for (size_t i = 0; i < f.code.size(); ++i) {
    const VmInstr& in = f.code[i];
    std::string s;
    switch (in.op) {
      case VmOpcode::bind_params:
        s = "bind_params";
        break;
      case VmOpcode::call: {
        s = fmt::format("call r{} ({})", in.reg, reg_name(in.reg));
        std::vector<std::string> places;
        if (in.index >= 0)
          for (int k : f.binding_allocs[static_cast<size_t>(in.index)]) {
            const PlannedAlloc& a = f.plan->allocs[static_cast<size_t>(k)];
            places.push_back(a.placement == AllocPlacement::storage  ? fmt::format("s{}", a.storage)
                             : a.placement == AllocPlacement::output ? std::string("output")
                                                                     : std::string("dynamic"));
          }
        if (!places.empty()) s += fmt::format(" -> {}", fmt::join(places, ", "));
        break;
      }
      case VmOpcode::match_cast:
        s = fmt::format("match_cast r{} ({})", in.reg, reg_name(in.reg));
        break;
      case VmOpcode::check:
        s = fmt::format("check {} condition(s) of {}", in.binding->runtime_checks.size(),
                        in.binding->var);
        break;
      case VmOpcode::alloc:
        s = in.index < 0 ? fmt::format("alloc arena of {} bytes", f.plan->arena_bytes)
                         : fmt::format("alloc s{} ({} bytes)", in.index,
                                       f.plan->storages[static_cast<size_t>(in.index)].bytes.str());
        break;
      case VmOpcode::release: {
        const PlannedAlloc& a = f.plan->allocs[static_cast<size_t>(in.index)];
        s = fmt::format("release {} (s{})", a.var, a.storage);
        break;
      }
      case VmOpcode::free:
        s = fmt::format("free r{} ({})", in.reg, reg_name(in.reg));
        break;
      case VmOpcode::branch:
        s = fmt::format("branch unless {} to {}", in.binding->call.cond.str(), in.index);
        break;
      case VmOpcode::jump:
        s = fmt::format("jump to {}", in.index);
        break;
      case VmOpcode::move:
        s = fmt::format("move r{} ({}) to r{} ({})", in.args[0], reg_name(in.args[0]), in.reg,
                        reg_name(in.reg));
        break;
      case VmOpcode::ret:
        s = fmt::format("ret r{} ({})", in.reg, reg_name(in.reg));
        break;
    }
    out += fmt::format("{:4}: {}\n", i, s);
  }
  return out;
}

std::optional<UGraphExecutor> ugraph_executor_by_name(std::string_view name) {
  if (name == "interp") return UGraphExecutor::interpreter;
  std::optional<Backend> backend = backend_by_name(name);
  if (!backend) return std::nullopt;
  switch (*backend) {
    case Backend::cpu:
      return UGraphExecutor::cpu;
    case Backend::cuda:
      return UGraphExecutor::cuda;
    case Backend::cuda_emulation:
      return UGraphExecutor::cuda_emulation;
  }
  return std::nullopt;
}

void Vm::compile_ugraphs() {
  if (options_.ugraph_executor == UGraphExecutor::interpreter) return;
  for (const UGraphDef& u : module_.ugraphs) ugraph_program(*u.graph);
}

const Program& Vm::ugraph_program(const Graph& g) {
  auto& program = programs_[&g];
  if (program) return *program;
  Backend backend = Backend::cpu;
  switch (options_.ugraph_executor) {
    case UGraphExecutor::interpreter:
      WEFT_CHECK(false, "the interpreter compiles no µGraph");
      break;
    case UGraphExecutor::cpu:
      backend = Backend::cpu;
      break;
    case UGraphExecutor::cuda:
      backend = Backend::cuda;
      break;
    case UGraphExecutor::cuda_emulation:
      backend = Backend::cuda_emulation;
      break;
  }
  const std::string target = backend == Backend::cpu ? "" : options_.gpu_target;
  program = compile_program(g, backend_target(backend, target), backend, options_.build);
  return *program;
}

const Vm::PreparedCall& Vm::prepared(const Binding& b) {
  if (auto it = prepared_.find(&b); it != prepared_.end()) return it->second;
  const Call& c = b.call;
  PreparedCall p;
  if (c.kind == CallKind::op) {
    p.op = op_by_name(c.callee);
    const bool constant = std::all_of(c.attrs.begin(), c.attrs.end(), [](const auto& a) {
      if (auto* e = std::get_if<SymExpr>(&a.second)) return e->is_constant();
      if (auto* l = std::get_if<std::vector<SymExpr>>(&a.second))
        return std::all_of(l->begin(), l->end(), [](const SymExpr& x) { return x.is_constant(); });
      return true;
    });
    if (constant) p.attrs = evaluate_attrs(c.attrs, SymBinding{}, c.loc);
  } else if (c.kind == CallKind::ugraph) {
    if (const UGraphDef* u = module_.find_ugraph(c.callee)) p.ugraph = u->graph.get();
  }
  return prepared_.emplace(&b, std::move(p)).first->second;
}

const Attrs& Vm::attrs_at(const Binding& b, const SymBinding& heap, Attrs& scratch) {
  if (const PreparedCall& p = prepared(b); p.attrs) return *p.attrs;
  scratch = evaluate_attrs(b.call.attrs, heap, b.call.loc);
  return scratch;
}

namespace {

VmValue tensor_value(Tensor<double> t) {
  return VmValue{std::make_shared<Tensor<double>>(std::move(t))};
}

VmValue results_value(std::vector<Tensor<double>> outs) {
  if (outs.size() == 1) return tensor_value(std::move(outs[0]));
  auto tu = std::make_shared<VmTuple>();
  for (auto& t : outs) tu->push_back(tensor_value(std::move(t)));
  return VmValue{std::shared_ptr<const VmTuple>(std::move(tu))};
}

}  // namespace

namespace {

// Operator `kind` of binding `b` as a one-operator µGraph at the actual shapes: the table's shape
// rule checks them again (and reports them at the call).
Graph one_operator_graph(const Binding& b, OpKind kind, const std::vector<Shape>& shapes,
                         const Attrs& attrs) {
  GraphBuilder gb(Level::kernel, b.var);
  std::vector<ValueId> ids;
  for (size_t i = 0; i < shapes.size(); ++i)
    ids.push_back(
        gb.add_input(fmt::format("x{}", i), TensorType{DType::f32, shapes[i]}, b.call.loc));
  for (ValueId o : gb.add_op(kind, ids, attrs, {}, b.call.loc)) gb.add_output(o);
  return std::move(gb).finish();
}

}  // namespace

VmValue run_operator_on_host(const Binding& b, const std::vector<const Tensor<double>*>& tensors,
                             const SymBinding& heap, bool cpu_library, bool* in_f32,
                             const TensorOwners* owners, const Attrs* given_attrs) {
  const Call& c = b.call;
  if (c.kind == CallKind::op) {
    const OpKind kind = *op_by_name(c.callee);
    const Attrs attrs = given_attrs ? *given_attrs : evaluate_attrs(c.attrs, heap, c.loc);
    const ModelOpImpl* impl = model_impl(kind);
    WEFT_CHECK(!impl || impl->eval, "composite {} reached the VM unexpanded", c.callee);
    // A result of f64, an integer type or bool is computed in f64 (exact for integers to 2^53,
    // then truncated and wrapped by its storage), never by the f32 paths.
    const bool in_f64 = !b.type.every_tensor(is_kernel_dtype);
    try {
      // Operands the library or the elementwise path refuse reach the µGraph below, whose
      // shape rule reports them as it always did.
      std::optional<Tensor<double>> done;
      if (cpu_library && !in_f64) done = run_on_cpu_library(kind, tensors, attrs, owners);
      if (!done) done = elementwise_on_host(kind, tensors, attrs, !in_f64);
      if (done && in_f32 && !in_f64) *in_f32 = true;
      if (!done && impl) done = impl->eval(tensors, attrs);
      if (done) return tensor_value(std::move(*done));
    } catch (const UserError& e) {
      throw UserError(c.loc, e.message());
    }
    std::vector<Shape> shapes;
    std::vector<Tensor<double>> inputs;
    for (const Tensor<double>* t : tensors) {
      shapes.push_back(t->shape);
      inputs.push_back(*t);
    }
    return results_value(
        evaluate_real(one_operator_graph(b, kind, shapes, attrs), inputs, !in_f64));
  }
  WEFT_CHECK(c.kind == CallKind::lib, "{} is not an operator call", call_kind_name(c.kind));
  return tensor_value(lib_function_by_name(c.callee)->eval(tensors, {}));
}

namespace {

VmValue f32_value(Tensor<float> t) {
  return VmValue{std::make_shared<const Tensor<float>>(std::move(t))};
}

// One output as a tensor, several as a tuple, in the f32 lane.
VmValue f32_results(std::vector<Tensor<float>> outs) {
  if (outs.size() == 1) return f32_value(std::move(outs[0]));
  auto tu = std::make_shared<VmTuple>();
  for (auto& t : outs) tu->push_back(f32_value(std::move(t)));
  return VmValue{std::shared_ptr<const VmTuple>(std::move(tu))};
}

// Where a result of the f32 lane is written: its planned slot where one is given and the result
// fits (the floats packed in the slot's bytes), else a fresh tensor.
class F32Result {
 public:
  F32Result(const VmSlot* place, int64_t capacity) : place_(place), capacity_(capacity) {}
  float* room(const Shape& shape) {
    shape_ = shape;
    if (place_ && (numel(shape) + 1) / 2 <= capacity_) {
      in_place_ = true;
      return reinterpret_cast<float*>(place_->buffer->data() + place_->offset);
    }
    fresh_ = Tensor<float>(shape, 0.0f);
    return fresh_.data.data();
  }
  F32Destination destination() {
    return [this](const Shape& shape) { return room(shape); };
  }
  VmValue value() && {
    if (in_place_)
      return VmValue{VmSlot{place_->buffer, place_->offset, shape_, true, nullptr, nullptr}};
    return f32_value(std::move(fresh_));
  }

 private:
  const VmSlot* place_;
  int64_t capacity_;
  bool in_place_ = false;
  Shape shape_;
  Tensor<float> fresh_;
};

// A tensor operand (f32 lane or f64, in planned storage or not) as a view; null shape for other
// values. A tensor's owner comes with it; a slot's storage is reused by later tensors, so it has
// none (nothing may be kept by it).
HostOperand operand_of(const VmValue& v) {
  if (auto* p = std::get_if<std::shared_ptr<const Tensor<float>>>(&v.v))
    return HostOperand::of((*p)->shape, (*p)->data.data(), *p);
  if (auto* p = std::get_if<std::shared_ptr<const Tensor<double>>>(&v.v))
    return HostOperand::of((*p)->shape, (*p)->data.data(), *p);
  if (const VmSlot* s = v.slot()) {
    // An f32 slot's floats were copied into these bytes (vm_frame.cpp); only the operators
    // (oneDNN, the generated code, the elementwise loop) read them as floats. A view of a
    // tensor outside planned storage keeps that tensor as its owner.
    return s->f32 ? HostOperand::of(s->shape, static_cast<const float*>(s->data()), s->viewed)
                  : HostOperand::of(s->shape, static_cast<const double*>(s->data()), s->viewed);
  }
  return {};
}

}  // namespace

namespace {

// A convolution or pooling planned channels-last that the library refused, by weft's own code:
// its operands row-major, its result stored back channels-last where planned.
VmValue library_refused(OpKind kind, const std::vector<HostOperand>& operands, const Attrs& attrs,
                        ChannelsLast channels_last, F32Result result) {
  std::vector<Tensor<double>> plain;
  std::vector<const Tensor<double>*> tensors;
  for (size_t i = 0; i < operands.size(); ++i) {
    if (channels_last & operand_channels_last(static_cast<int>(i)))
      plain.push_back(operand_of(from_channels_last(operands[i])).to_tensor<double>());
    else
      plain.push_back(operands[i].to_tensor<double>());
  }
  for (const Tensor<double>& t : plain) tensors.push_back(&t);
  const Tensor<double> out = model_impl(kind)->eval(tensors, attrs);
  Tensor<float> values(out.shape, std::vector<float>(out.data.begin(), out.data.end()));
  if (channels_last & kResultChannelsLast) values = to_channels_last(values);
  std::copy(values.data.begin(), values.data.end(), result.room(values.shape));
  return std::move(result).value();
}

}  // namespace

std::optional<VmValue> Vm::execute_in_f32(const Binding& b,
                                          const std::vector<HostOperand>& operands,
                                          const SymBinding& heap, const VmSlot* place,
                                          int64_t capacity, ChannelsLast channels_last) {
  const Call& c = b.call;
  // A result of f64, an integer type or bool is computed in f64 (run_operator_on_host).
  if (c.kind != CallKind::op || !b.type.every_tensor(is_kernel_dtype)) return std::nullopt;
  const OpKind kind = *prepared(b).op;
  const OpClass cls = class_of(kind);
  const bool library = options_.cpu_library && runs_on_cpu_library(kind);
  // Elementwise rows: unary, binary, and the model-only ones with real semantics (where, pow).
  const bool elementwise = cls == OpClass::unary || cls == OpClass::binary ||
                           (cls == OpClass::model && op_info(kind).real);
  const bool movement = kind == OpKind::reshape || kind == OpKind::permute ||
                        kind == OpKind::concat || kind == OpKind::repeat;
  // Other table operators of the µGraph layers: their one-operator µGraph by the interpreter in
  // f32, as the f64 path runs it, on the lane's values.
  const bool table = cls != OpClass::model && (op_info(kind).levels & kAtKernel);
  // Model-only operators with an f32 implementation (layer_norm, softmax_safe).
  const ModelOpImpl* impl = cls == OpClass::model ? model_impl(kind) : nullptr;
  const bool model_f32 = impl && impl->eval_f32;
  if (!library && !elementwise && !movement && !table && !model_f32) return std::nullopt;
  Attrs scratch;
  const Attrs* evaluated = nullptr;
  try {
    evaluated = &attrs_at(b, heap, scratch);
    const Attrs& attrs = *evaluated;
    F32Result result(place, capacity);
    if (library && channels_last) {
      if (run_on_cpu_library_f32(kind, operands, attrs, result.destination(), channels_last))
        return std::move(result).value();
      return library_refused(kind, operands, attrs, channels_last, F32Result(place, capacity));
    }
    if ((library && run_on_cpu_library_f32(kind, operands, attrs, result.destination())) ||
        (elementwise && elementwise_on_host_f32(kind, operands, attrs, result.destination())) ||
        (movement && movement_on_host_f32(kind, operands, attrs, result.destination())))
      return std::move(result).value();
    if (model_f32) return f32_value(impl->eval_f32(operands, attrs));
    if (kind == OpKind::split && operands.size() == 1)
      if (auto parts = split_on_host_f32(operands[0], attrs)) return f32_results(*std::move(parts));
  } catch (const UserError& e) {
    throw UserError(c.loc, e.message());
  }
  if (!table) return std::nullopt;
  std::vector<Shape> shapes;
  std::vector<Tensor<float>> inputs;
  for (const HostOperand& x : operands) {
    shapes.push_back(*x.shape);
    inputs.push_back(x.to_tensor<float>());
  }
  std::vector<Tensor<float>> outs =
      evaluate(one_operator_graph(b, kind, shapes, *evaluated), inputs, RealDomain<float>{});
  return f32_results(std::move(outs));
}

VmValue Vm::run_ugraph(const Binding& b, const std::vector<HostOperand>& operands, bool* in_f32,
                       const VmSlot* place, int64_t capacity) {
  const Call& c = b.call;
  const Graph* found = prepared(b).ugraph;
  WEFT_CHECK(found, "call_ugraph of {}, which the module does not define", c.callee);
  const Graph& g = *found;
  bool shapes_match = operands.size() == g.inputs.size();
  for (size_t i = 0; shapes_match && i < operands.size(); ++i)
    shapes_match = *operands[i].shape == g.type(g.inputs[i]).shape;
  if (!shapes_match) {  // the interpreter's check says what differs
    std::vector<Shape> shapes;
    for (const HostOperand& x : operands) shapes.push_back(*x.shape);
    try {
      check_input_shapes(g, shapes);
    } catch (const UserError& e) {
      throw UserError(c.loc, fmt::format("call_ugraph {}: {}", c.callee, e.message()));
    }
  }
  // Destination-passing: the outputs are fresh tensors of the µGraph's output types.
  if (options_.ugraph_executor == UGraphExecutor::interpreter) {
    std::vector<Tensor<double>> inputs;
    for (const HostOperand& x : operands) inputs.push_back(x.to_tensor<double>());
    return results_value(evaluate_real(g, inputs, true));
  }
  if (in_f32) *in_f32 = true;
  // The f32 lane's operands as they are, f64 ones converted.
  std::vector<std::vector<float>> converted(operands.size());
  std::vector<const float*> inputs;
  for (size_t i = 0; i < operands.size(); ++i) {
    const HostOperand& x = operands[i];
    if (!x.f32) converted[i].assign(x.f64, x.f64 + x.numel());
    inputs.push_back(x.f32 ? x.f32 : converted[i].data());
  }
  const Program& program = ugraph_program(g);
  std::vector<Tensor<float>> outs;
  outs.reserve(g.outputs.size());
  if (const auto* cpu = dynamic_cast<const CpuProgram*>(&program)) {
    if (g.outputs.size() == 1) {  // written in place where planned
      F32Result result(place, capacity);
      const Shape& shape = g.type(g.outputs[0]).shape;
      float* out = result.room(shape);
      std::fill(out, out + numel(shape), 0.0f);  // the program's outputs start zeroed
      cpu->run(inputs, {out});
      return std::move(result).value();
    }
    std::vector<float*> outputs;
    for (ValueId o : g.outputs)
      outputs.push_back(outs.emplace_back(g.type(o).shape, 0.0f).data.data());
    cpu->run(inputs, outputs);
  } else {
    for (size_t i = 0; i < operands.size(); ++i)
      if (operands[i].f32)
        converted[i].assign(operands[i].f32, operands[i].f32 + operands[i].numel());
    auto raw = program.run(converted);
    for (size_t i = 0; i < raw.size(); ++i)
      outs.emplace_back(g.type(g.outputs[i]).shape, std::move(raw[i]));
  }
  return f32_results(std::move(outs));
}

VmValue Vm::execute(const Binding& b, const std::vector<const VmValue*>& in, const SymBinding& heap,
                    int depth, bool* in_f32, const VmSlot* place, int64_t capacity,
                    ChannelsLast channels_last) {
  const Call& c = b.call;
  std::vector<HostOperand> operands;
  auto require_tensors = [&] {
    for (size_t i = 0; i < in.size(); ++i) {
      operands.push_back(operand_of(*in[i]));
      if (!operands.back().shape)
        throw UserError(c.loc, fmt::format("operand {} is not a tensor", i + 1));
    }
  };
  switch (c.kind) {
    case CallKind::op:
    case CallKind::lib: {
      require_tensors();
      if (std::optional<VmValue> done =
              execute_in_f32(b, operands, heap, place, capacity, channels_last)) {
        if (in_f32) *in_f32 = true;
        return *std::move(done);
      }
      // The f64 paths: operands of the f32 lane and in planned storage copied into f64 tensors.
      std::vector<std::shared_ptr<const Tensor<double>>> held;
      std::vector<const Tensor<double>*> tensors;
      TensorOwners owners;
      for (size_t i = 0; i < in.size(); ++i) {
        if (const Tensor<double>* t = in[i]->tensor()) {
          tensors.push_back(t);
          owners.push_back(std::get_if<std::shared_ptr<const Tensor<double>>>(&in[i]->v));
          continue;
        }
        held.push_back(std::make_shared<const Tensor<double>>(operands[i].to_tensor<double>()));
        tensors.push_back(held.back().get());
        owners.push_back(nullptr);
      }
      Attrs scratch;
      const Attrs* attrs = c.kind == CallKind::op ? &attrs_at(b, heap, scratch) : nullptr;
      return run_operator_on_host(b, tensors, heap, options_.cpu_library, in_f32, &owners, attrs);
    }
    case CallKind::ugraph:
      require_tensors();
      return run_ugraph(b, operands, in_f32, place, capacity);
    case CallKind::func: {
      std::vector<VmValue> args;
      for (const VmValue* v : in) args.push_back(*v);
      return call_function(compiled(c.callee), args, depth + 1);
    }
    case CallKind::tuple: {
      auto tu = std::make_shared<VmTuple>();
      for (const VmValue* v : in) tu->push_back(*v);
      return VmValue{std::shared_ptr<const VmTuple>(std::move(tu))};
    }
    case CallKind::item: {
      const VmTuple* tu = in[0]->tuple();
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

}  // namespace weft
