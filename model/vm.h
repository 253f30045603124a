// The model executor: each function compiled once to a register program (instructions: bind
// parameters, call, match_cast, check, free, return), run by a small VM whose frames hold
// registers and a heap of symbolic-variable values. Table operators run through the reference
// interpreter, model operators and library functions through their CPU implementations,
// µGraphs through the interpreter or a compiled CPU program. Deterministic.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "interp/tensor.h"
#include "model/module.h"
#include "runtime/program.h"

namespace weft {

struct VmValue;
using VmTuple = std::vector<VmValue>;
// A run-time value: a tensor (shared: tuples, items and casts alias it), a tuple, or an integer.
struct VmValue {
  std::variant<std::shared_ptr<const Tensor<double>>, std::shared_ptr<const VmTuple>, int64_t> v;
  const Tensor<double>* tensor() const;
  const VmTuple* tuple() const;
};

enum class VmOpcode : uint8_t {
  bind_params,  // match the arguments against the parameter types (binds variables)
  call,         // run a binding's call into its register
  match_cast,   // bind or check the cast type's variables against the value
  check,        // a binding's deduced run-time conditions
  free,         // drop a register after its last use
  ret,          // check the result against the return type and return it
};

struct VmInstr {
  VmOpcode op;
  int reg = -1;                      // the register written (call, match_cast) or dropped (free)
  std::vector<int> args;             // registers read
  const Binding* binding = nullptr;  // call, match_cast, check
};

struct VmFunction {
  const Function* fn = nullptr;
  int num_registers = 0;
  std::vector<bool> fresh;  // registers holding newly produced values (not aliases)
  std::vector<VmInstr> code;
};

// "vm.builtin"-style choice for call_ugraph.
enum class UGraphExecutor : uint8_t { interpreter, cpu };

struct VmOptions {
  UGraphExecutor ugraph_executor = UGraphExecutor::interpreter;
  BuildOptions build;  // for the cpu executor
};

struct VmStats {
  int64_t instructions = 0;
  int64_t calls = 0;
  int64_t frees = 0;
  int64_t peak_live_bytes = 0;    // f32 bytes of tensors held by registers at once (max)
  int64_t total_alloc_bytes = 0;  // f32 bytes of every tensor produced (no reuse at all)
};

class Vm {
 public:
  // Compiles every function of `module` (which must outlive the VM).
  explicit Vm(const Module& module, VmOptions options = {});

  // Runs function `name` on `args`. Throws UserError for wrong arguments, failed run-time checks
  // (naming the variable or condition and the values), and bad data.
  VmValue run(const std::string& name, const std::vector<VmValue>& args);
  // With the cpu executor: builds (or takes from the build cache) every µGraph's CPU program now,
  // so build failures surface before the first run; otherwise each is built at its first call.
  void compile_ugraphs();
  const VmFunction& compiled(const std::string& name) const;
  const VmStats& stats() const { return stats_; }
  // "  0: bind_params\n  1: call h = rms_norm(x)...": the register program, for `model print --vm`.
  std::string disassemble(const std::string& name) const;

 private:
  VmValue call_function(const VmFunction& f, const std::vector<VmValue>& args, int depth);
  VmValue execute(const Binding& b, const std::vector<const VmValue*>& in, const SymBinding& heap,
                  int depth);
  void account(const VmValue& v, int sign);
  const Program& cpu_program(const Graph& g);

  const Module& module_;
  VmOptions options_;
  std::map<std::string, VmFunction> functions_;
  std::map<const Graph*, std::unique_ptr<Program>> programs_;
  VmStats stats_;
  int64_t live_bytes_ = 0;
};

// Binds or checks the symbolic variables of `type` against `value` in `heap`. `what` names the
// value in errors ("match_cast of 'y'", "parameter 'x'"). Throws UserError at `loc` on mismatch.
void vm_match(const MType& type, const VmValue& value, SymBinding& heap, const std::string& what,
              const SourceLoc& loc);

}  // namespace weft
