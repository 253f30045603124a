// The model VM: compilation of functions to register programs (with frees after last uses) and
// their execution.
#include "model/vm.h"

#include <fmt/format.h>

#include <algorithm>

#include "driver/run.h"
#include "interp/interpreter.h"
#include "model/library.h"
#include "model/model_ops.h"

namespace weft {

const Tensor<double>* VmValue::tensor() const {
  auto* p = std::get_if<std::shared_ptr<const Tensor<double>>>(&v);
  return p ? p->get() : nullptr;
}
const VmTuple* VmValue::tuple() const {
  auto* p = std::get_if<std::shared_ptr<const VmTuple>>(&v);
  return p ? p->get() : nullptr;
}

namespace {

constexpr int kMaxCallDepth = 256;

std::string kind_str(const VmValue& v) {
  if (v.tensor()) return "a tensor of shape " + shape_str(v.tensor()->shape);
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
      const Tensor<double>* t = value.tensor();
      if (!t)
        throw UserError(loc,
                        fmt::format("{}: expected {}, got {}", what, type.str(), kind_str(value)));
      if (static_cast<int>(t->shape.size()) != type.rank)
        throw UserError(loc, fmt::format("{}: expected {} (rank {}), got a tensor of shape {}",
                                         what, type.str(), type.rank, shape_str(t->shape)));
      if (type.dims)
        for (size_t i = 0; i < t->shape.size(); ++i)
          match_expr((*type.dims)[i], t->shape[i], heap, fmt::format("{}, dim {}", what, i), loc);
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

Vm::Vm(const Module& module, VmOptions options) : module_(module), options_(std::move(options)) {
  for (const Function& f : module.functions) {
    VmFunction vf;
    vf.fn = &f;
    std::map<std::string, int> reg;
    for (const Param& p : f.params) reg.emplace(p.name, static_cast<int>(reg.size()));
    std::vector<const Binding*> bindings;
    for (const Block& b : f.blocks)
      for (const Binding& x : b.bindings) bindings.push_back(&x);
    for (const Binding* b : bindings) reg.emplace(b->var, static_cast<int>(reg.size()));
    vf.num_registers = static_cast<int>(reg.size());
    vf.fresh.assign(reg.size(), false);
    for (const Binding* b : bindings)
      vf.fresh[static_cast<size_t>(reg.at(b->var))] = b->call.kind != CallKind::tuple &&
                                                      b->call.kind != CallKind::item &&
                                                      b->call.kind != CallKind::match_cast;
    // Last use of each register (the result's is the return: never freed before it).
    std::vector<int> last_use(reg.size(), -1);
    for (size_t i = 0; i < bindings.size(); ++i)
      for (const std::string& a : bindings[i]->call.args) last_use[reg.at(a)] = static_cast<int>(i);
    last_use[reg.at(f.result)] = static_cast<int>(bindings.size());
    vf.code.push_back({VmOpcode::bind_params, -1, {}, nullptr});
    for (size_t i = 0; i < bindings.size(); ++i) {
      const Binding* b = bindings[i];
      std::vector<int> args;
      for (const std::string& a : b->call.args) args.push_back(reg.at(a));
      if (!b->runtime_checks.empty()) vf.code.push_back({VmOpcode::check, -1, {}, b});
      VmOpcode op = b->call.kind == CallKind::match_cast ? VmOpcode::match_cast : VmOpcode::call;
      vf.code.push_back({op, reg.at(b->var), args, b});
      // Registers whose last use is this instruction, and a result nobody reads.
      std::vector<int> dead;
      for (int a : args)
        if (last_use[a] == static_cast<int>(i)) dead.push_back(a);
      if (last_use[reg.at(b->var)] < 0) dead.push_back(reg.at(b->var));
      std::sort(dead.begin(), dead.end());
      dead.erase(std::unique(dead.begin(), dead.end()), dead.end());
      for (int d : dead) vf.code.push_back({VmOpcode::free, d, {}, nullptr});
    }
    vf.code.push_back({VmOpcode::ret, reg.at(f.result), {}, nullptr});
    for (size_t p = 0; p < f.params.size(); ++p)
      if (last_use[p] < 0)
        vf.code.insert(vf.code.begin() + 1, {VmOpcode::free, static_cast<int>(p), {}, nullptr});
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
  auto reg_name = [&](int r) {
    if (r < static_cast<int>(f.fn->params.size())) return f.fn->params[static_cast<size_t>(r)].name;
    int i = static_cast<int>(f.fn->params.size());
    for (const Block& b : f.fn->blocks)
      for (const Binding& x : b.bindings)
        if (i++ == r) return x.var;
    return std::string("?");
  };
  for (size_t i = 0; i < f.code.size(); ++i) {
    const VmInstr& in = f.code[i];
    std::string s;
    switch (in.op) {
      case VmOpcode::bind_params:
        s = "bind_params";
        break;
      case VmOpcode::call:
        s = fmt::format("call r{} ({})", in.reg, reg_name(in.reg));
        break;
      case VmOpcode::match_cast:
        s = fmt::format("match_cast r{} ({})", in.reg, reg_name(in.reg));
        break;
      case VmOpcode::check:
        s = fmt::format("check {} condition(s) of {}", in.binding->runtime_checks.size(),
                        in.binding->var);
        break;
      case VmOpcode::free:
        s = fmt::format("free r{} ({})", in.reg, reg_name(in.reg));
        break;
      case VmOpcode::ret:
        s = fmt::format("ret r{} ({})", in.reg, reg_name(in.reg));
        break;
    }
    out += fmt::format("{:4}: {}\n", i, s);
  }
  return out;
}

void Vm::account(const VmValue& v, int sign) {
  if (const Tensor<double>* t = v.tensor()) {
    live_bytes_ += sign * t->numel() * 4;
    stats_.peak_live_bytes = std::max(stats_.peak_live_bytes, live_bytes_);
  }
}

VmValue Vm::run(const std::string& name, const std::vector<VmValue>& args) {
  return call_function(compiled(name), args, 0);
}

void Vm::compile_ugraphs() {
  if (options_.ugraph_executor != UGraphExecutor::cpu) return;
  for (const UGraphDef& u : module_.ugraphs) cpu_program(*u.graph);
}

const Program& Vm::cpu_program(const Graph& g) {
  auto& program = programs_[&g];
  if (!program)
    program = compile_program(g, backend_target(Backend::cpu, ""), Backend::cpu, options_.build);
  return *program;
}

VmValue Vm::call_function(const VmFunction& f, const std::vector<VmValue>& args, int depth) {
  if (depth > kMaxCallDepth)
    throw UserError(f.fn->loc, fmt::format("calls nest deeper than {}", kMaxCallDepth));
  const Function& fn = *f.fn;
  if (args.size() != fn.params.size())
    throw UserError(fn.loc, fmt::format("function '{}' takes {} arguments, got {}", fn.name,
                                        fn.params.size(), args.size()));
  std::vector<VmValue> regs(static_cast<size_t>(f.num_registers));
  std::vector<bool> live(regs.size(), false);
  SymBinding heap;
  for (const VmInstr& in : f.code) {
    ++stats_.instructions;
    switch (in.op) {
      case VmOpcode::bind_params:
        for (size_t i = 0; i < args.size(); ++i) {
          vm_match(fn.params[i].type, args[i], heap,
                   fmt::format("parameter '{}' of '{}'", fn.params[i].name, fn.name),
                   fn.params[i].loc);
          regs[i] = args[i];
          live[i] = true;
        }
        break;
      case VmOpcode::check:
        for (const SymCondition& c : in.binding->runtime_checks)
          if (!c.holds(heap))
            throw UserError(in.binding->call.loc,
                            fmt::format("run-time check failed: {} does not hold at {}", c.str(),
                                        binding_str(heap)));
        break;
      case VmOpcode::match_cast: {
        const VmValue& x = regs[static_cast<size_t>(in.args[0])];
        vm_match(in.binding->call.cast_type, x, heap,
                 fmt::format("match_cast of '{}' to {}", in.binding->call.args[0],
                             in.binding->call.cast_type.str()),
                 in.binding->call.loc);
        regs[static_cast<size_t>(in.reg)] = x;
        live[static_cast<size_t>(in.reg)] = true;
        break;
      }
      case VmOpcode::call: {
        std::vector<const VmValue*> operands;
        for (int a : in.args) operands.push_back(&regs[static_cast<size_t>(a)]);
        ++stats_.calls;
        VmValue out = execute(*in.binding, operands, heap, depth);
        if (const Tensor<double>* t = out.tensor(); t && f.fresh[static_cast<size_t>(in.reg)])
          stats_.total_alloc_bytes += t->numel() * 4;
        regs[static_cast<size_t>(in.reg)] = std::move(out);
        live[static_cast<size_t>(in.reg)] = true;
        if (f.fresh[static_cast<size_t>(in.reg)]) account(regs[static_cast<size_t>(in.reg)], 1);
        break;
      }
      case VmOpcode::free:
        ++stats_.frees;
        if (f.fresh[static_cast<size_t>(in.reg)] && live[static_cast<size_t>(in.reg)])
          account(regs[static_cast<size_t>(in.reg)], -1);
        regs[static_cast<size_t>(in.reg)] = VmValue{};
        live[static_cast<size_t>(in.reg)] = false;
        break;
      case VmOpcode::ret: {
        VmValue result = regs[static_cast<size_t>(in.reg)];
        if (f.fresh[static_cast<size_t>(in.reg)]) account(result, -1);
        vm_match(fn.ret, result, heap, fmt::format("the result of '{}'", fn.name), fn.result_loc);
        return result;
      }
    }
  }
  WEFT_FAIL("function {} has no ret", fn.name);
}

namespace {

Attrs evaluate_attrs(const MAttrs& attrs, const SymBinding& heap, const SourceLoc& loc) {
  Attrs out;
  auto eval = [&](const SymExpr& e) {
    SymEvalResult r = try_evaluate(e, heap);
    if (!r.value) throw UserError(loc, fmt::format("cannot evaluate {}: {}", e.str(), r.error));
    return *r.value;
  };
  for (const auto& [name, value] : attrs) {
    if (auto* e = std::get_if<SymExpr>(&value))
      out.set(name, eval(*e));
    else if (auto* r = std::get_if<Rational>(&value))
      out.set(name, *r);
    else {
      std::vector<int64_t> list;
      for (const SymExpr& x : std::get<std::vector<SymExpr>>(value)) list.push_back(eval(x));
      out.set(name, list);
    }
  }
  return out;
}

VmValue tensor_value(Tensor<double> t) {
  return VmValue{std::make_shared<const Tensor<double>>(std::move(t))};
}

VmValue results_value(std::vector<Tensor<double>> outs) {
  if (outs.size() == 1) return tensor_value(std::move(outs[0]));
  auto tu = std::make_shared<VmTuple>();
  for (auto& t : outs) tu->push_back(tensor_value(std::move(t)));
  return VmValue{std::shared_ptr<const VmTuple>(std::move(tu))};
}

}  // namespace

VmValue Vm::execute(const Binding& b, const std::vector<const VmValue*>& in, const SymBinding& heap,
                    int depth) {
  const Call& c = b.call;
  std::vector<const Tensor<double>*> tensors;
  for (const VmValue* v : in) tensors.push_back(v->tensor());
  auto require_tensors = [&] {
    for (size_t i = 0; i < tensors.size(); ++i)
      if (!tensors[i]) throw UserError(c.loc, fmt::format("operand {} is not a tensor", i + 1));
  };
  switch (c.kind) {
    case CallKind::op: {
      require_tensors();
      // A one-operator µGraph at the actual shapes: the table's shape rule checks them again.
      GraphBuilder gb(Level::kernel, b.var);
      std::vector<ValueId> ids;
      std::vector<Tensor<double>> inputs;
      for (size_t i = 0; i < tensors.size(); ++i) {
        ids.push_back(
            gb.add_input(fmt::format("x{}", i), TensorType{DType::f32, tensors[i]->shape}, c.loc));
        inputs.push_back(*tensors[i]);
      }
      auto outs =
          gb.add_op(*op_by_name(c.callee), ids, evaluate_attrs(c.attrs, heap, c.loc), {}, c.loc);
      for (ValueId o : outs) gb.add_output(o);
      return results_value(evaluate_real(std::move(gb).finish(), inputs, true));
    }
    case CallKind::model_op: {
      require_tensors();
      const ModelOpInfo& info = model_op_info(*model_op_by_name(c.callee));
      Attrs attrs = evaluate_attrs(c.attrs, heap, c.loc);
      try {
        return tensor_value(info.eval(tensors, attrs));
      } catch (const UserError& e) {
        throw UserError(c.loc, e.message());
      }
    }
    case CallKind::lib: {
      require_tensors();
      const LibFunction* lib = lib_function_by_name(c.callee);
      return tensor_value(lib->eval(tensors, {}));
    }
    case CallKind::ugraph: {
      require_tensors();
      const Graph& g = *module_.find_ugraph(c.callee)->graph;
      std::vector<Tensor<double>> inputs;
      std::vector<Shape> shapes;
      for (const Tensor<double>* t : tensors) {
        inputs.push_back(*t);
        shapes.push_back(t->shape);
      }
      try {
        check_input_shapes(g, shapes);
      } catch (const UserError& e) {
        throw UserError(c.loc, fmt::format("call_ugraph {}: {}", c.callee, e.message()));
      }
      // Destination-passing: the outputs are fresh tensors of the µGraph's output types.
      if (options_.ugraph_executor == UGraphExecutor::interpreter)
        return results_value(evaluate_real(g, inputs, true));
      std::vector<std::vector<float>> flat;
      for (const auto& t : inputs) flat.emplace_back(t.data.begin(), t.data.end());
      auto raw = cpu_program(g).run(flat);
      std::vector<Tensor<double>> outs;
      for (size_t i = 0; i < raw.size(); ++i)
        outs.emplace_back(g.type(g.outputs[i]).shape,
                          std::vector<double>(raw[i].begin(), raw[i].end()));
      return results_value(std::move(outs));
    }
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
      break;
  }
  WEFT_FAIL("match_cast reached execute");
}

}  // namespace weft
