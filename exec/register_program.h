// The register-program interpreter, written once for the host VM (exec/vm.h) and the
// device-resident executor (exec/device_vm.h): the loop over a compiled function's VmInstrs,
// generic over the value type and a frame that decides what the value-specific instructions do.
#pragma once

#include <fmt/format.h>

#include <concepts>
#include <string>
#include <vector>

#include "core/error.h"
#include "exec/vm.h"

namespace weft {

// One call's frame of an executor over values of type F::Value. The loop keeps the registers,
// the heap of symbolic values and control flow; the frame owns the rest: how a value's shape is
// matched against a type (a host tensor, a slot of planned storage, a device buffer), what a call
// computes and where its result lives, how storage is allocated and what freeing a register, an
// if's move and the return do besides copying registers.
template <class F>
concept RegisterFrame = requires(F& frame, const typename F::Value& v, const VmInstr& in,
                                 SymBinding& heap, const std::vector<typename F::Value>& regs,
                                 const MType& type, const SourceLoc& loc, const std::string& what,
                                 int reg, bool live) {
  // vm_match's checks and bindings on the value (UserError at `loc` on a mismatch).
  frame.match(type, v, heap, what, loc);
  frame.step();           // one instruction executed
  frame.alloc(in, heap);  // VmOpcode::alloc: storage of the function's memory plan
  frame.release(in);      // VmOpcode::release: a planned allocation is dead
  // VmOpcode::call: the binding's result, computed on the operand registers `in.args`.
  { frame.call(in, regs, heap) } -> std::same_as<typename F::Value>;
  frame.hold(reg, v);        // `reg` now holds `v` (the result of a call or a move)
  frame.drop(reg, v, live);  // VmOpcode::free of `reg` (`live`: it held a value)
  { frame.moved(v) } -> std::same_as<typename F::Value>;          // an if arm's result
  { frame.returned(reg, v) } -> std::same_as<typename F::Value>;  // VmOpcode::ret's value
};

// Runs the register program `f` on `args` in `frame`; `depth` counts the calls it is nested in.
// Throws UserError for too deep nesting, wrong arguments, failed run-time checks and conditions.
template <RegisterFrame Frame>
typename Frame::Value run_register_program(const VmFunction& f,
                                           const std::vector<typename Frame::Value>& args,
                                           int depth, Frame& frame) {
  using Value = typename Frame::Value;
  const Function& fn = *f.fn;
  if (depth > kVmMaxCallDepth)
    throw UserError(fn.loc, fmt::format("calls nest deeper than {}", kVmMaxCallDepth));
  if (args.size() != fn.params.size())
    throw UserError(fn.loc, fmt::format("function '{}' takes {} arguments, got {}", fn.name,
                                        fn.params.size(), args.size()));
  std::vector<Value> regs(static_cast<size_t>(f.num_registers));
  std::vector<bool> live(regs.size(), false);
  SymBinding heap;
  for (size_t pc = 0; pc < f.code.size();) {
    const VmInstr& in = f.code[pc++];
    frame.step();
    const auto reg = static_cast<size_t>(in.reg);
    switch (in.op) {
      case VmOpcode::bind_params:
        for (size_t i = 0; i < args.size(); ++i) {
          frame.match(fn.params[i].type, args[i], heap, f.param_what[i], fn.params[i].loc);
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
      case VmOpcode::alloc:
        frame.alloc(in, heap);
        break;
      case VmOpcode::release:
        frame.release(in);
        break;
      case VmOpcode::match_cast: {
        const Value& x = regs[static_cast<size_t>(in.args[0])];
        frame.match(in.binding->call.cast_type, x, heap,
                    fmt::format("match_cast of '{}' to {}", in.binding->call.args[0],
                                in.binding->call.cast_type.str()),
                    in.binding->call.loc);
        regs[reg] = x;
        live[reg] = true;
        break;
      }
      case VmOpcode::call:
        regs[reg] = frame.call(in, regs, heap);
        live[reg] = true;
        frame.hold(in.reg, regs[reg]);
        break;
      case VmOpcode::free:
        frame.drop(in.reg, regs[reg], live[reg]);
        regs[reg] = Value{};
        live[reg] = false;
        break;
      case VmOpcode::branch: {
        const SymCondition& c = in.binding->call.cond;
        bool holds = false;
        try {
          holds = c.holds(heap);
        } catch (const UserError& e) {
          throw UserError(in.binding->call.loc, fmt::format("if {}: {}", c.str(), e.message()));
        }
        if (!holds) pc = static_cast<size_t>(in.index);
        break;
      }
      case VmOpcode::jump:
        pc = static_cast<size_t>(in.index);
        break;
      case VmOpcode::move:
        regs[reg] = frame.moved(regs[static_cast<size_t>(in.args[0])]);
        live[reg] = true;
        frame.hold(in.reg, regs[reg]);
        break;
      case VmOpcode::ret: {
        Value result = frame.returned(in.reg, regs[reg]);
        frame.match(fn.ret, result, heap, f.result_what, fn.result_loc);
        return result;
      }
    }
  }
  WEFT_FAIL("function {} has no ret", fn.name);
}

}  // namespace weft
