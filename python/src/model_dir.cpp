// Compiled model directories in Python: compiling a model file into one (driver/
// compile_to_dir, with its progress lines handed to a Python callable) and loading one to run
// (driver/compiled_dir), arrays by input and output name. The GIL is released while weft
// works; one run at a time per directory.
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <fmt/format.h>

#include <memory>
#include <mutex>

#include "driver/compile_to_dir.h"
#include "driver/compiled_dir.h"
#include "driver/model_decode.h"
#include "driver/model_megakernel.h"
#include "python/src/bindings.h"
#include "python/src/model_arrays.h"

namespace weft::python {
namespace {

using Values = std::map<std::string, int64_t>;

// Compiles the model file at `path` into `out_dir`; returns summary.json's text. `progress`
// (None or a callable) receives each progress line; an exception it raises (a KeyboardInterrupt
// too) is raised when the compile has finished, and it is not called again.
std::string compile_model_dir(const std::string& path, const std::string& out_dir,
                              const std::vector<Values>& bindings, const Values& bounds,
                              const ModelDirOptions& settings, nb::object progress) {
  ModelDirOptions options = settings;
  for (const Values& b : bindings) options.bindings.emplace_back(b.begin(), b.end());
  std::exception_ptr callback_error;  // destroyed with the GIL held
  if (!progress.is_none())
    options.progress = [&](const std::string& line) {
      nb::gil_scoped_acquire gil;
      if (callback_error) return;
      try {
        progress(line);
      } catch (nb::python_error& e) {
        callback_error = std::make_exception_ptr(e);
      }
    };
  std::string summary;
  {
    nb::gil_scoped_release release;
    SymProver prover;
    OnnxImportOptions onnx;
    onnx.bounds = std::map<std::string, int64_t>(bounds.begin(), bounds.end());
    ModelFile model = load_model_file(path, prover, onnx);
    summary = compile_model_to_dir(model, prover, out_dir, options).summary.dump(1);
  }
  if (callback_error) std::rethrow_exception(callback_error);
  return summary;
}

class CompiledDirCore {
 public:
  explicit CompiledDirCore(const std::string& dir) {
    nb::gil_scoped_release release;
    dir_ = std::make_unique<CompiledModelDir>(dir);
  }

  std::vector<std::string> input_names(const std::string& function) const {
    return dir_->input_names(function);
  }

  // Runs `function` on arrays by input name (`integral[i]`: array i came with an integer dtype);
  // the outputs by name as f32 (`f32`) or f64 NumPy arrays.
  nb::dict run(const std::string& function, const std::vector<std::string>& names,
               const std::vector<InputF64>& arrays, const std::vector<bool>& integral, bool f32,
               const std::string& backend, bool megakernel, int workers) {
    const std::optional<UGraphExecutor> executor = ugraph_executor_by_name(backend);
    if (!executor)
      throw UserError(fmt::format(
          "CompiledModelDir.run: backend must be 'cpu', 'cuda', 'cuda-emulation' or 'interp', "
          "not '{}'",
          backend));
    if (names.size() != arrays.size() || integral.size() != arrays.size())
      throw UserError("CompiledModelDir.run: one name and integral flag per array");
    NpzArrays inputs;
    for (size_t i = 0; i < arrays.size(); ++i) inputs[names[i]] = npy_array(arrays[i], integral[i]);
    std::map<std::string, Tensor<double>> outputs;
    {
      nb::gil_scoped_release release;
      std::lock_guard lock(mutex_);
      if (megakernel) {
        ModelMegakernelOptions o;
        o.function = function;
        o.platform = *executor == UGraphExecutor::cuda ? MpkPlatform::gpu : MpkPlatform::emulation;
        o.workers = workers;
        std::vector<VmValue> args = dir_->arguments(function, inputs, "the inputs");
        outputs = run_model_megakernel(*dir_, model_megakernel(*dir_, args, o), args).results;
      } else {
        outputs = dir_->run(function, inputs, "the inputs", *executor);
      }
    }
    nb::dict out;
    const std::map<std::string, NpyElement> elements = dir_->output_elements(function);
    for (const auto& [name, t] : outputs) {
      auto e = elements.find(name);
      out[nb::str(name.c_str())] =
          tensor_array(t, f32, e == elements.end() ? NpyElement::f4 : e->second);
    }
    return out;
  }

  // Greedy decoding (driver/model_decode.h): the tokens, each step's seconds and how it ran.
  nb::dict decode(const std::string& function, const std::vector<int64_t>& prompt, int64_t tokens,
                  const std::string& backend, bool megakernel, int64_t capacity, int workers,
                  const std::string& prefill, const std::vector<std::string>& names,
                  const std::vector<InputF64>& arrays) {
    const std::optional<UGraphExecutor> executor = ugraph_executor_by_name(backend);
    if (!executor || (megakernel && *executor != UGraphExecutor::cuda &&
                      *executor != UGraphExecutor::cuda_emulation))
      throw UserError(fmt::format("CompiledModelDir.decode: backend must be {}, not '{}'",
                                  megakernel ? "'cuda-emulation' or 'cuda' with megakernel=True"
                                             : "'cpu', 'cuda', 'cuda-emulation' or 'interp'",
                                  backend));
    ModelDecodeOptions o;
    o.function = function;
    o.tokens = tokens;
    o.path = megakernel ? DecodePath::megakernel : DecodePath::vm;
    o.capacity = capacity;
    o.executor = *executor;
    o.platform = *executor == UGraphExecutor::cuda ? MpkPlatform::gpu : MpkPlatform::emulation;
    o.workers = workers;
    o.prefill = prefill;
    if (names.size() != arrays.size())
      throw UserError("CompiledModelDir.decode: one name per weight array");
    for (size_t i = 0; i < arrays.size(); ++i) o.weights[names[i]] = npy_array(arrays[i], false);
    ModelDecodeResult r;
    {
      nb::gil_scoped_release release;
      std::lock_guard lock(mutex_);
      r = decode_model(*dir_, prompt, o);
    }
    nb::dict out;
    out["tokens"] = r.tokens;
    out["step_seconds"] = r.step_seconds;
    out["capacity"] = r.capacity;
    out["compiled_steps"] = r.compiled_steps;
    out["note"] = r.note;
    out["stored_plan"] = r.stored_plan;
    out["build_seconds"] = r.build_seconds;
    out["setup_bytes"] = r.setup_bytes;
    out["bytes_to_device_per_step"] = r.bytes_to_device_per_step;
    out["bytes_to_host_per_step"] = r.bytes_to_host_per_step;
    return out;
  }

 private:
  std::unique_ptr<CompiledModelDir> dir_;
  std::mutex mutex_;
};

}  // namespace

void bind_model_dir(nb::module_& m) {
  m.def(
      "compile_model_dir",
      [](const std::string& path, const std::string& out_dir, const std::vector<Values>& bindings,
         const Values& bounds, const std::string& target, double time_budget_s,
         int64_t state_budget, const std::string& cache_dir, bool no_cache, bool no_build,
         int max_region_ops, const std::string& rewrite, bool fuse, nb::object progress) {
        ModelDirOptions o;
        o.rewrite = rewrite_mode_from_name(rewrite);
        o.fuse = fuse;
        o.target = target;
        o.time_budget_s = time_budget_s;
        o.state_budget = state_budget;
        o.cache_dir = cache_dir;
        o.no_cache = no_cache;
        o.no_build = no_build;
        o.max_region_ops = max_region_ops;
        return compile_model_dir(path, out_dir, bindings, bounds, o, progress);
      },
      nb::arg("path"), nb::arg("out_dir"), nb::arg("bindings"), nb::arg("bounds"),
      nb::arg("target"), nb::arg("time_budget_s"), nb::arg("state_budget"), nb::arg("cache_dir"),
      nb::arg("no_cache"), nb::arg("no_build"), nb::arg("max_region_ops"), nb::arg("rewrite"),
      nb::arg("fuse"), nb::arg("progress").none());
  // The defaults of `weft compile` as driver/compile_to_dir.h declares them, so the Python API
  // reads them rather than writing them again.
  m.def("compile_defaults", [] {
    const ModelDirOptions o;
    nb::dict d;
    d["target"] = o.target;
    d["time_budget_s"] = o.time_budget_s;
    d["state_budget"] = o.state_budget;
    d["max_region_ops"] = o.max_region_ops;
    d["rewrite"] = rewrite_mode_name(o.rewrite);
    d["fuse"] = o.fuse;
    return d;
  });
  m.def("is_compiled_model_dir", &is_compiled_model_dir, nb::arg("path"));
  nb::class_<CompiledDirCore>(m, "CompiledDirCore")
      .def(nb::init<std::string>(), nb::arg("dir"))
      .def("input_names", &CompiledDirCore::input_names, nb::arg("function"))
      .def("run", &CompiledDirCore::run, nb::arg("function"), nb::arg("names"), nb::arg("arrays"),
           nb::arg("integral"), nb::arg("f32"), nb::arg("backend"), nb::arg("megakernel"),
           nb::arg("workers"))
      .def("decode", &CompiledDirCore::decode, nb::arg("function"), nb::arg("prompt"),
           nb::arg("tokens"), nb::arg("backend"), nb::arg("megakernel"), nb::arg("capacity"),
           nb::arg("workers"), nb::arg("prefill"), nb::arg("names"), nb::arg("arrays"));
}

}  // namespace weft::python
