// The model executor: each function compiled once to a register program (instructions: bind
// parameters, allocate storage, call, match_cast, check, release, free, branch, jump, move,
// return), run by a small
// VM whose frames hold registers, the storage of the function's memory plan (model/plan.h) and a
// heap of symbolic-variable values. Table operators run through the reference
// interpreter, model operators and library functions through their CPU implementations,
// µGraphs through the interpreter or a compiled CPU program; each call's result and each argument
// of a run are stored in their dtype (rounded to f32, f16 or bf16). f32 tensors that the f32 paths
// (compiled µGraphs, the CPU library, the elementwise path) make and take stay in f32 between
// them (the f32 lane); every other value is held in f64. Deterministic.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "core/tensor.h"
#include "cpulib/cpu_library.h"
#include "model/evaluate_at.h"
#include "model/module.h"
#include "model/plan.h"
#include "runtime/program.h"

namespace weft {

struct VmValue;
using VmTuple = std::vector<VmValue>;
// A tensor that lives in a frame's planned storage: `shape` at element `offset` of `buffer`. An
// f32 slot holds its floats packed in the bytes that start at that element (copied in and out
// with memcpy: the buffer's objects stay doubles). A reshape is a slot too, viewing its
// operand's elements under its own shape (model/plan.h, `is_view`): the operand's slot, or a
// tensor outside planned storage (a weight, an output), which `viewed` keeps alive and whose
// elements start at `view_data` (`buffer` is then null).
struct VmSlot {
  std::shared_ptr<std::vector<double>> buffer;
  int64_t offset = 0;
  Shape shape;
  bool f32 = false;
  std::shared_ptr<const void> viewed;
  const void* view_data = nullptr;
  // The first element (a double, or the first of the packed floats when f32).
  const void* data() const { return buffer ? buffer->data() + offset : view_data; }
};
// A run-time value: a tensor in f64 or, in the f32 lane, in f32 (shared: tuples, items and casts
// alias it), a tensor in planned storage, a tuple, or an integer. Slots never leave their frame:
// the VM copies them out (resolves them) for operators, callees and the result; f32 tensors
// never leave the VM (Vm::run returns f64 ones).
struct VmValue {
  std::variant<std::shared_ptr<const Tensor<double>>, std::shared_ptr<const VmTuple>, int64_t,
               VmSlot, std::shared_ptr<const Tensor<float>>>
      v;
  const Tensor<double>* tensor() const;
  const Tensor<float>* tensor_f32() const;  // a tensor of the f32 lane
  const VmTuple* tuple() const;
  const VmSlot* slot() const;
};
// `v` with every tensor of the f32 lane converted to f64 (shared where there is none).
VmValue with_f64_tensors(const VmValue& v);

enum class VmOpcode : uint8_t {
  bind_params,  // match the arguments against the parameter types (binds variables)
  call,         // run a binding's call into its register
  match_cast,   // bind or check the cast type's variables against the value
  check,        // a binding's deduced run-time conditions
  alloc,        // allocate storage `index` of the plan (-1: the whole static arena)
  release,      // allocation `index` of the plan is dead (poisoned with NaN when asked)
  free,         // drop a register after its last use
  branch,       // an if's condition: on to its then arm, or jump to `index` (the else arm)
  jump,         // to `index` (past the else arm)
  move,         // an arm's result into the if's register (copied out of planned storage)
  ret,          // check the result against the return type and return it
};

struct VmInstr {
  VmOpcode op;
  int reg = -1;  // the register written (call, match_cast) or dropped (free)
  // call: the binding's index (-1 in an if's arm); alloc: storage; release: allocation; branch,
  // jump: the target instruction.
  int index = -1;
  std::vector<int> args;             // registers read
  const Binding* binding = nullptr;  // call, match_cast, check
  bool view = false;                 // call: a reshape, its operand viewed (no copy)
};

struct VmFunction {
  const Function* fn = nullptr;
  int num_registers = 0;
  std::vector<std::string> register_names;
  std::vector<bool> fresh;  // registers holding newly produced values (not aliases)
  std::vector<VmInstr> code;
  const FunctionPlan* plan = nullptr;            // null: every tensor allocated on its own
  std::vector<std::vector<int>> binding_allocs;  // binding index -> the plan's allocations
  // "parameter 'x' of 'f'" per parameter and "the result of 'f'": the names errors give, made
  // once rather than at every call.
  std::vector<std::string> param_what;
  std::string result_what;
  // Binding index -> which of its tensors are channels-last (exec/channels_last.h); empty when
  // the VM runs no CPU library.
  std::vector<ChannelsLast> channels_last;
};

// "vm.builtin"-style choice for call_ugraph: the reference interpreter, or each µGraph compiled
// by a backend (runtime/program.h) and run through its Program: cpu (lowered for the cpu
// target), cuda (generated CUDA on the GPU) or cuda_emulation (the same CUDA as host code),
// the last two lowered for `VmOptions::gpu_target`.
enum class UGraphExecutor : uint8_t { interpreter, cpu, cuda, cuda_emulation };
// "interp", or a backend's name (runtime/program.h: "cpu", "cuda", "cuda-emulation").
std::optional<UGraphExecutor> ugraph_executor_by_name(std::string_view name);

// How deep calls may nest before a run is refused (a recursive module): the VM's and the device
// executor's limit.
constexpr int kVmMaxCallDepth = 256;

struct VmOptions {
  UGraphExecutor ugraph_executor = UGraphExecutor::interpreter;
  BuildOptions build;  // for the compiled executors
  // The GPU target the cuda executors lower for; empty: the device's (cuda), h100 (emulation).
  std::string gpu_target;
  bool plan = true;  // run with a memory plan (false: every tensor allocated on its own)
  // Convolution and matmul by the CPU library (cpulib/cpu_library.h) where weft has one; false:
  // by weft's own code (the model operators' f64 semantics, the interpreter).
  bool cpu_library = true;
  // A static plan runs in one arena sized by the bounds (allocated once per function and
  // reused) when the call's binding needs most of it; a call at shapes well below the bounds
  // sizes each storage at its binding instead. false: always at run time, as for a symbolic plan.
  bool static_arena = true;
  // The most host memory (bytes) a run may hold; 0: the memory this process may use
  // (core/system_memory.h). A tensor or storage beyond it is refused with a UserError naming the
  // binding, its shape and the dims that make it big, before the allocation is tried.
  int64_t memory_limit_bytes = 0;
  // Fill planned storage with NaN when allocated and each tensor's bytes when it dies, so a plan
  // that reuses storage too early shows in the results.
  bool poison = false;
  // Run with this plan instead of planning (tests: a wrong plan must show); its element size
  // must be 8 (f64).
  std::optional<ModulePlan> given_plan;
};

struct VmStats {
  int64_t instructions = 0;
  int64_t calls = 0;
  int64_t frees = 0;
  int64_t peak_live_bytes = 0;    // f32 bytes of tensors held by registers at once (max)
  int64_t total_alloc_bytes = 0;  // f32 bytes of every tensor produced (no reuse at all)
  // f32 bytes held at once by frames' planned storage plus tensors outside it (outputs, dynamic
  // sizes, callees' results), at the maximum: the plan's peak at this run's binding.
  int64_t peak_planned_bytes = 0;
  // f32 bytes at the maximum with no plan and no frees: every tensor a frame produces held until
  // the frame returns.
  int64_t peak_naive_bytes = 0;
};

class Vm {
 public:
  // Compiles every function of `module` with its composites expanded (model/expand.h).
  explicit Vm(const Module& module, VmOptions options = {});
  Vm(const Vm&) = delete;  // compiled code points into the VM's module
  Vm& operator=(const Vm&) = delete;

  // Runs function `name` on `args`. Throws UserError for wrong arguments, failed run-time checks
  // (naming the variable or condition and the values), and bad data.
  VmValue run(const std::string& name, const std::vector<VmValue>& args);
  // With the cpu executor: builds (or takes from the build cache) every µGraph's CPU program now,
  // so build failures surface before the first run; otherwise each is built at its first call.
  void compile_ugraphs();
  const VmFunction& compiled(const std::string& name) const;
  const VmStats& stats() const { return stats_; }
  const ModulePlan& plan() const { return plan_; }
  // The module the VM runs (the caller's, composites expanded): compiled code points into it.
  const Module& module() const { return module_; }
  // "  0: bind_params\n  1: call h = rms_norm(x)...": the register program, for `model print --vm`.
  std::string disassemble(const std::string& name) const;

 private:
  // A call's frame of the register program (exec/register_program.h, exec/vm_frame.cpp).
  class Frame;
  VmValue call_function(const VmFunction& f, const std::vector<VmValue>& args, int depth);
  // `*in_f32` (where given) is set when every element of the result is already an f32 value (the
  // CPU library, the elementwise path and compiled µGraphs compute in f32), so storing it as f32
  // changes nothing and is skipped.
  // `place` (where given): the planned storage of an f32 result, `capacity` doubles at `place`'s
  // offset; a result of the f32 lane is written there (the value returned is then that slot)
  // when it fits.
  // `channels_last`: the layouts of a convolution's tensors (VmFunction::channels_last).
  VmValue execute(const Binding& b, const std::vector<const VmValue*>& in, const SymBinding& heap,
                  int depth, bool* in_f32 = nullptr, const VmSlot* place = nullptr,
                  int64_t capacity = 0, ChannelsLast channels_last = 0);
  // An operator whose result is f32 (or another kernel dtype) by the CPU library or the
  // elementwise path on f32 values, the result in the f32 lane; nullopt where neither takes it.
  std::optional<VmValue> execute_in_f32(const Binding& b, const std::vector<HostOperand>& operands,
                                        const SymBinding& heap, const VmSlot* place,
                                        int64_t capacity, ChannelsLast channels_last);
  // A call_ugraph: by the interpreter (f64), or compiled, its outputs in the f32 lane.
  VmValue run_ugraph(const Binding& b, const std::vector<HostOperand>& operands, bool* in_f32,
                     const VmSlot* place, int64_t capacity);
  void account(const VmValue& v, int sign);
  void account_storage(int64_t elements);
  // Whether `bytes` more fit under the memory limit with what the VM holds now.
  bool fits(int64_t bytes) const;
  // UserError unless `bytes` more fit under the memory limit; `what` describes them.
  void require_memory(int64_t bytes, const SourceLoc& loc,
                      const std::function<std::string()>& what) const;
  // The same for the tensors binding `b` produces at `heap` (those of a known size).
  void require_memory_for(const Binding& b, const SymBinding& heap) const;
  // The µGraph compiled by the executor's backend (built at the first call, then kept).
  const Program& ugraph_program(const Graph& g);
  // What a call needs from the module, looked up at its first run rather than at every one: an
  // operator's kind and, when none of its attributes depends on a variable, its attributes; a
  // call_ugraph's µGraph.
  struct PreparedCall {
    std::optional<OpKind> op;
    std::optional<Attrs> attrs;
    const Graph* ugraph = nullptr;
  };
  const PreparedCall& prepared(const Binding& b);
  // The attributes of operator call `b` at `heap`: the prepared ones, or evaluated into
  // `scratch`.
  const Attrs& attrs_at(const Binding& b, const SymBinding& heap, Attrs& scratch);

  Module module_;  // the caller's, composites expanded
  VmOptions options_;
  ModulePlan plan_;
  std::map<std::string, VmFunction> functions_;
  std::map<const Graph*, std::unique_ptr<Program>> programs_;
  std::unordered_map<const Binding*, PreparedCall> prepared_;
  // Static arenas not held by a frame, per function: allocated once, reused by later calls.
  std::map<const VmFunction*, std::vector<std::shared_ptr<std::vector<double>>>> arenas_;
  VmStats stats_;
  // f32 arguments in the f32 lane, by the tensor given: a model's weights come back run after
  // run as the same tensors and are converted once while they live.
  struct F32Argument {
    std::weak_ptr<const Tensor<double>> given;
    std::shared_ptr<const Tensor<float>> lane;
  };
  std::map<const Tensor<double>*, F32Argument> f32_arguments_;
  int64_t live_bytes_ = 0;
  int64_t outside_bytes_ = 0;  // live tensors not in planned storage
  int64_t storage_bytes_ = 0;  // planned storage held by frames
  int64_t naive_bytes_ = 0;    // every tensor produced by the live frames
  int64_t memory_limit_ = 0;   // options_.memory_limit_bytes, or the process's memory
};

// A table or model operator (CallKind::op) or a library call (CallKind::lib) computed on the host
// as the VM computes it (convolution and matmul by the CPU library in f32 where `cpu_library` and
// weft has one, other model operators and libraries in f64, table operators by the interpreter in
// f32), not yet stored in the result's dtype. UserError at the call for bad data.
// `*in_f32` (where given) tells whether every element of the result is an f32 value. `owners`
// (where given, one per tensor, null where none) lets the library keep operands it prepares (a
// convolution's weights in its layout) for as long as their tensor lives.
// `attrs` (where given): the call's attributes already evaluated at `heap`.
VmValue run_operator_on_host(const Binding& b, const std::vector<const Tensor<double>*>& tensors,
                             const SymBinding& heap, bool cpu_library = true,
                             bool* in_f32 = nullptr, const TensorOwners* owners = nullptr,
                             const Attrs* attrs = nullptr);

// Binds or checks the symbolic variables of `type` against `value` in `heap`. `what` names the
// value in errors ("match_cast of 'y'", "parameter 'x'"). Throws UserError at `loc` on mismatch.
void vm_match(const MType& type, const VmValue& value, SymBinding& heap, const std::string& what,
              const SourceLoc& loc);

}  // namespace weft
