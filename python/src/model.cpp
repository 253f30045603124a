// Models in Python: a .wmod module loaded and checked as `weft model check` does (model/parser,
// model/deduce), printed (model/printer), and run by the model VM (model/vm) with call_ugraph
// through the reference interpreter or compiled CPU programs (`--ugraph-executor`). Arguments
// become VM values through model/run_io, as the CLI's .npz arguments do. The GIL is released
// while weft works; one run at a time per model (a VM is not reentrant).
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <mutex>

#include "model/deduce.h"
#include "model/parser.h"
#include "model/printer.h"
#include "model/run_io.h"
#include "model/vm.h"
#include "python/src/arrays.h"
#include "python/src/bindings.h"

namespace weft::python {
namespace {

using InputF64 = nb::ndarray<const double, nb::c_contig, nb::device::cpu>;
using ParamTuple = std::tuple<std::string, std::string>;  // name, type ("f32[b, n]", "int(p)")

// A VM value as Python: a tensor as a NumPy array (f32 or f64), a tuple as a tuple, an integer
// as an int.
nb::object to_python(const VmValue& v, bool f32) {
  if (const Tensor<double>* t = v.tensor()) {
    if (f32)
      return nb::cast(owning_array(std::vector<float>(t->data.begin(), t->data.end()), t->shape));
    return nb::cast(owning_array(t->data, t->shape));
  }
  if (const VmTuple* tu = v.tuple()) {
    nb::list items;
    for (const VmValue& x : *tu) items.append(to_python(x, f32));
    return nb::tuple(items);
  }
  return nb::int_(std::get<int64_t>(v.v));
}

class ModelCore {
 public:
  explicit ModelCore(const std::string& path) : path_(path) {
    nb::gil_scoped_release release;
    module_ = load_module(path, prover_);
    check_module(module_, prover_);
  }

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

  std::vector<ParamTuple> params(const std::string& function) const {
    std::vector<ParamTuple> out;
    for (const Param& p : function_to_run(module_, function, SourceLoc{path_}).params)
      out.emplace_back(p.name, p.type.str());
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
    if (arrays.size() != fn.params.size() || integral.size() != arrays.size())
      throw UserError(fmt::format("function '{}' takes {} argument{}, given {}", fn.name,
                                  fn.params.size(), fn.params.size() == 1 ? "" : "s",
                                  arrays.size()));
    UGraphExecutor how;
    if (executor == "interp")
      how = UGraphExecutor::interpreter;
    else if (executor == "cpu")
      how = UGraphExecutor::cpu;
    else
      throw UserError(fmt::format("unknown µGraph executor '{}'; use interp or cpu", executor));
    std::vector<VmValue> args;
    for (size_t i = 0; i < arrays.size(); ++i) {
      const Param& p = fn.params[i];
      NpyArray a;
      a.integral = integral[i];
      Shape shape;
      for (size_t d = 0; d < arrays[i].ndim(); ++d)
        shape.push_back(static_cast<int64_t>(arrays[i].shape(d)));
      const double* data = arrays[i].data();
      a.tensor = Tensor<double>(shape, std::vector<double>(data, data + arrays[i].size()));
      args.push_back(argument_value(p, a, fmt::format("argument '{}'", p.name), p.loc));
    }
    VmValue result;
    {
      nb::gil_scoped_release release;
      std::lock_guard lock(mutex_);
      result = vm(how).run(function, args);
    }
    return to_python(result, f32);
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
  std::string cache_dir_;
  std::unique_ptr<Vm> interp_vm_, cpu_vm_;
  std::mutex mutex_;
};

}  // namespace

void bind_model(nb::module_& m) {
  nb::class_<ModelCore>(m, "ModelCore")
      .def(nb::init<std::string>(), nb::arg("path"))
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
