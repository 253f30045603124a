// Models in Python: a model file loaded and checked as `weft model check` does
// (driver/model_file: .wmod parsed, .onnx imported, whose weights the model keeps and
// supplies to main), printed (model/printer), and run by the model VM (exec/vm) with call_ugraph
// through the reference interpreter or compiled CPU programs (`--ugraph-executor`). Arguments
// become VM values through exec/run_io, as the CLI's .npz arguments do. The GIL is released
// while weft works; one run at a time per model (a VM is not reentrant).
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <mutex>

#include "driver/model_file.h"
#include "exec/run_io.h"
#include "exec/vm.h"
#include "model/deduce.h"
#include "model/printer.h"
#include "python/src/bindings.h"
#include "python/src/model_arrays.h"

namespace weft::python {
namespace {

using ParamTuple = std::tuple<std::string, std::string>;  // name, type ("f32[b, n]", "int(p)")

// A VM value of type `type` as Python: a tensor as a NumPy array (integer and bool dtypes as
// theirs, floats as f32 or f64), a tuple as a tuple, an integer as an int.
nb::object to_python(const VmValue& v, const MType& type, bool f32) {
  if (const Tensor<double>* t = v.tensor())
    return tensor_array(*t, f32, type.is_tensor() ? npy_element(type.dtype) : NpyElement::f4);
  if (const VmTuple* tu = v.tuple()) {
    nb::list items;
    for (size_t i = 0; i < tu->size(); ++i)
      items.append(to_python((*tu)[i], i < type.fields.size() ? type.fields[i] : MType{}, f32));
    return nb::tuple(items);
  }
  return nb::int_(std::get<int64_t>(v.v));
}

class ModelCore {
 public:
  // `bounds`: upper bounds of an ONNX model's dim_param variables (.onnx only).
  ModelCore(const std::string& path, const std::map<std::string, int64_t>& bounds) : path_(path) {
    nb::gil_scoped_release release;
    OnnxImportOptions onnx;
    onnx.bounds = bounds;
    ModelFile file = load_model_file(path, prover_, onnx);
    module_ = std::move(file.module);
    if (file.imported) {
      notes_ = file.imported->notes;
      weights_ = std::move(file.imported->weights);
      for (const OnnxName& n : file.imported->inputs) onnx_names_[n.wmod] = n.onnx;
    }
  }

  bool imported() const { return !onnx_names_.empty() || !weights_.empty(); }
  const std::vector<std::string>& notes() const { return notes_; }

  const std::string& name() const { return module_.name; }
  std::string text(bool type_comments) const { return print_module(module_, type_comments); }

  std::string check() {
    nb::gil_scoped_release release;
    std::lock_guard lock(mutex_);
    check_module(module_, prover_);
    return module_summary(module_);
  }

  std::vector<std::string> functions() const {
    std::vector<std::string> out;
    for (const Function& f : module_.functions) out.push_back(f.name);
    return out;
  }

  // The parameters a caller gives: an imported model's weights are the model's own, and its
  // inputs go by their ONNX names.
  std::vector<ParamTuple> params(const std::string& function) const {
    std::vector<ParamTuple> out;
    for (const Param& p : function_to_run(module_, function, SourceLoc{path_}).params) {
      if (weights_.count(p.name)) continue;
      auto onnx = onnx_names_.find(p.name);
      out.emplace_back(onnx == onnx_names_.end() ? p.name : onnx->second, p.type.str());
    }
    return out;
  }

  std::string return_type(const std::string& function) const {
    return function_to_run(module_, function, SourceLoc{path_}).ret.str();
  }

  std::string disassemble(const std::string& function) {
    std::lock_guard lock(mutex_);
    function_to_run(module_, function, SourceLoc{path_});
    return vm(UGraphExecutor::interpreter).disassemble(function);
  }

  // Builds every µGraph's CPU program (the compiled executor's VM).
  void compile(const std::string& cache_dir) {
    nb::gil_scoped_release release;
    std::lock_guard lock(mutex_);
    if (cache_dir != cache_dir_) cpu_vm_.reset();  // the VM builds into its cache folder
    cache_dir_ = cache_dir;
    vm(UGraphExecutor::cpu).compile_ugraphs();
  }

  // Runs `function` on one array per parameter (in parameter order; `integral[i]`: array i came
  // with an integer dtype), call_ugraph by `executor` ("interp" or "cpu").
  nb::object run(const std::string& function, const std::vector<InputF64>& arrays,
                 const std::vector<bool>& integral, const std::string& executor, bool f32) {
    const Function& fn = function_to_run(module_, function, SourceLoc{path_});
    size_t given = fn.params.size();
    for (const Param& p : fn.params) given -= weights_.count(p.name);
    if (arrays.size() != given || integral.size() != arrays.size())
      throw UserError(fmt::format("function '{}' takes {} argument{}, given {}", fn.name, given,
                                  given == 1 ? "" : "s", arrays.size()));
    UGraphExecutor how;
    if (executor == "interp")
      how = UGraphExecutor::interpreter;
    else if (executor == "cpu")
      how = UGraphExecutor::cpu;
    else
      throw UserError(fmt::format("unknown µGraph executor '{}'; use interp or cpu", executor));
    std::vector<VmValue> args;
    size_t next = 0;
    for (const Param& p : fn.params) {
      NpyArray a;
      auto weight = weights_.find(p.name);
      if (weight != weights_.end()) {
        a.tensor = weight->second;
      } else {
        a = npy_array(arrays[next], integral[next]);
        ++next;
      }
      args.push_back(argument_value(p, a, fmt::format("argument '{}'", p.name), p.loc));
    }
    VmValue result;
    {
      nb::gil_scoped_release release;
      std::lock_guard lock(mutex_);
      result = vm(how).run(function, args);
    }
    return to_python(result, fn.ret, f32);
  }

 private:
  // The VM for `how`, made at first use (after the module has its final address).
  Vm& vm(UGraphExecutor how) {
    std::unique_ptr<Vm>& v = how == UGraphExecutor::cpu ? cpu_vm_ : interp_vm_;
    if (!v) {
      VmOptions options;
      options.ugraph_executor = how;
      options.build.cache_dir = cache_dir_;
      v = std::make_unique<Vm>(module_, options);
    }
    return *v;
  }

  std::string path_;
  SymProver prover_;
  Module module_;
  std::vector<std::string> notes_;                 // the import's (ImportedModel::notes)
  std::map<std::string, Tensor<double>> weights_;  // an imported model's, by parameter
  std::map<std::string, std::string> onnx_names_;  // an imported model's inputs: wmod -> ONNX
  std::string cache_dir_;
  std::unique_ptr<Vm> interp_vm_, cpu_vm_;
  std::mutex mutex_;
};

}  // namespace

void bind_model(nb::module_& m) {
  nb::class_<ModelCore>(m, "ModelCore")
      .def(nb::init<std::string, std::map<std::string, int64_t>>(), nb::arg("path"),
           nb::arg("bounds"))
      .def_prop_ro("imported", &ModelCore::imported)
      .def_prop_ro("notes", &ModelCore::notes)
      .def_prop_ro("name", &ModelCore::name)
      .def("text", &ModelCore::text, nb::arg("type_comments"))
      .def("check", &ModelCore::check)
      .def("functions", &ModelCore::functions)
      .def("params", &ModelCore::params, nb::arg("function"))
      .def("return_type", &ModelCore::return_type, nb::arg("function"))
      .def("disassemble", &ModelCore::disassemble, nb::arg("function"))
      .def("compile", &ModelCore::compile, nb::arg("cache_dir"))
      .def("run", &ModelCore::run, nb::arg("function"), nb::arg("arrays"), nb::arg("integral"),
           nb::arg("executor"), nb::arg("f32"));
}

}  // namespace weft::python
