// A compiled model directory (`weft compile MODEL -o DIR` or `weft.compile_model`) as a library:
// loading it, running a function of the compiled module through the VM with arguments and
// results by name (ONNX names for an imported model, whose weights the directory supplies), and
// timing it against the uncompiled module (`weft run DIR`, `weft bench DIR`).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "exec/device_vm.h"
#include "exec/npz.h"
#include "exec/vm.h"
#include "runtime/timing.h"
#include "sym/prove.h"

namespace weft {

// True for a directory compile_model_to_dir wrote.
bool is_compiled_model_dir(const std::string& path);

class CompiledModelDir {
 public:
  // Loads DIR's compiled and original modules, its bindings and (imported models) ONNX names and
  // weights. UserError for a file that is missing or malformed.
  explicit CompiledModelDir(const std::string& dir);
  CompiledModelDir(const CompiledModelDir&) = delete;  // the VMs point into the modules
  CompiledModelDir& operator=(const CompiledModelDir&) = delete;
  ~CompiledModelDir();

  const std::string& dir() const { return dir_; }
  const Module& compiled() const { return compiled_; }
  const Module& original() const { return original_; }
  SymProver& prover() { return prover_; }
  // The bindings it was compiled at (summary.json).
  const std::vector<SymBinding>& bindings() const { return bindings_; }
  // The parameters a caller gives for `function`: all of them, except an imported model's
  // weights; named as in the ONNX graph for an imported model's main.
  std::vector<std::string> input_names(const std::string& function) const;
  // Every parameter of `function` in order, weights included, named as input_names() names them.
  std::vector<std::string> parameter_names(const std::string& function) const;

  // The arguments of `function`, one per parameter, from the caller's arrays (by
  // input_names()) and the directory's weights; UserError naming `where` for a missing or
  // mismatched array.
  // `original`: for the original module's function (whose parameters lack the compiled one's
  // folded weights, driver/fold_constants.h).
  std::vector<VmValue> arguments(const std::string& function, const NpzArrays& inputs,
                                 const std::string& where, bool original = false) const;
  // The arguments of `function` at `binding`: the directory's weights, the binding's integers, and
  // zeros for every other tensor (what a trace needs: shapes, not values). UserError when the
  // binding leaves a dimension unknown.
  std::vector<VmValue> zero_arguments(const std::string& function, const SymBinding& binding) const;
  // A result's arrays: by the ONNX graph's output names for an imported model, else "result",
  // "result.0", ... (exec/run_io.h).
  std::map<std::string, Tensor<double>> named_results(const VmValue& result) const;
  // The same for arrays already named as result_arrays names them (exec/run_io.h).
  std::map<std::string, Tensor<double>> named_arrays(
      std::map<std::string, Tensor<double>> arrays) const;
  // The name named_arrays gives the array named `key` ("result", "result.0", ...).
  std::string output_name(const std::string& key) const;
  // The element type each of `function`'s results is written as (by its result type: f16 as
  // <f2, bf16 and f32 as <f4), by the names named_results gives.
  std::map<std::string, NpyElement> output_elements(const std::string& function) const;

  // The device executor's counters (launches, host fallbacks, graphs); null before a run with
  // the cuda or cuda_emulation executor.
  const DeviceVmStats* device_stats() const { return device_vm_ ? &device_vm_->stats() : nullptr; }

  // The device executor of `backend` over the compiled module (made at the first call, or when
  // the backend changes), µGraphs lowered for the directory's target when it is a GPU's.
  DeviceVm& device_vm(Backend backend);
  DeviceVmOptions device_options() const;
  // `function`'s arguments on device_vm()'s device: the directory's weights uploaded once and
  // kept resident, the others uploaded now.
  std::vector<DeviceValue> device_arguments(const std::string& function,
                                            const std::vector<VmValue>& args);

  // The target the directory was compiled for (summary.json).
  const std::string& target() const { return target_; }
  // The model file it was compiled from, as `weft compile` was given it (summary.json).
  const std::string& model_file() const { return model_file_; }

  // Runs `function` of the compiled module, its µGraphs through `executor`: compiled CPU
  // programs by default, through the host VM. cuda or cuda_emulation run the whole function
  // device-resident (exec/device_vm.h: on the GPU, or the same CUDA as host code): µGraphs as
  // their generated CUDA lowered for the directory's target when it is a GPU's (else h100, or the
  // device's), other operators as device kernels; the directory's weights are uploaded at the
  // first run and stay on the device, the caller's inputs are uploaded and the results
  // downloaded per run. Programs are built at the first run with an executor and kept. One run
  // at a time.
  std::map<std::string, Tensor<double>> run(const std::string& function, const NpzArrays& inputs,
                                            const std::string& where,
                                            UGraphExecutor executor = UGraphExecutor::cpu);
  // The values of `function`'s symbolic variables at `args` (its parameters in the original
  // module), and whether they are one of bindings() (else the call runs the function's generic,
  // per-operator body).
  SymBinding binding_of(const std::string& function, const std::vector<VmValue>& args) const;
  bool is_compiled_binding(const SymBinding& binding) const;
  // After run(): empty when its binding was one the directory was compiled at; else a sentence
  // saying the run took the per-operator path and how to compile that binding.
  const std::string& generic_path_note() const { return generic_path_note_; }

 private:
  std::string dir_;
  SymProver prover_;
  Module compiled_, original_;
  std::vector<SymBinding> bindings_;
  std::vector<std::pair<std::string, std::string>> onnx_inputs_, onnx_outputs_;  // onnx, wmod
  NpzArrays weights_;
  // The weights as arguments, made at the first call and given to every later one (by module:
  // original or compiled, and name).
  mutable std::map<std::pair<bool, std::string>, VmValue> weight_values_;
  // The same by parameter, so a call finds each weight without building its name's key.
  mutable std::unordered_map<const Param*, VmValue> weight_by_param_;
  std::string target_;
  std::string model_file_;
  std::unique_ptr<Vm> vm_;
  UGraphExecutor vm_executor_ = UGraphExecutor::cpu;
  std::unique_ptr<DeviceVm> device_vm_;
  std::map<std::string, DeviceValue> resident_weights_;  // by parameter name, on device_vm_
  std::string generic_path_note_;
};

// One input's times (medians) of `weft bench DIR`: the uncompiled module through the
// interpreter and as per-operator CPU kernels, and the compiled module; and the compiled
// outputs' largest error against the uncompiled ones, scaled by the largest output magnitude.
struct ModelBenchResult {
  SymBinding binding;     // the variables' values at these inputs
  bool compiled_binding;  // one the directory was compiled at (else every variant runs the
                          // original body)
  Timing interpreter, per_operator, compiled;
  double scaled_error = 0;
  // With a device: the compiled module and the per-operator baseline (lowered for the GPU
  // target) run device-resident (DeviceVm::time), the compiled outputs' error, the executor's
  // counters after the runs.
  std::optional<DeviceTiming> device_compiled, device_per_operator;
  double device_scaled_error = 0;
  DeviceVmStats device_stats;
  bool outputs_match = false;  // scaled_error (and device_scaled_error) within 1e-4
};

class CompiledModelBench {
 public:
  // Loads DIR and builds the three VMs (the per-operator baseline: the original module with
  // every table operator its own unsearched CPU kernel) and, with `device` (cuda or
  // cuda_emulation), the device executors of the compiled module and of the per-operator
  // baseline lowered for the GPU. UserError for reps < 1 or warmup < 0, or a device that cannot
  // be opened (cuda without a GPU: the reason).
  CompiledModelBench(const std::string& dir, const std::string& function, int warmup, int reps,
                     std::optional<Backend> device = std::nullopt);
  ~CompiledModelBench();
  const CompiledModelDir& dir() const { return *dir_; }
  // Times the three on `inputs` (as CompiledModelDir::arguments takes them).
  ModelBenchResult time(const NpzArrays& inputs, const std::string& where);

 private:
  std::string function_;
  int warmup_, reps_;
  std::unique_ptr<CompiledModelDir> dir_;
  Module per_operator_;
  std::unique_ptr<Vm> interpreter_, per_operator_vm_, compiled_;
  std::optional<Backend> device_;
  Module per_operator_gpu_;
  std::unique_ptr<DeviceVm> per_operator_device_;
};

}  // namespace weft
