// Running programs from Python: the equivalence verifier, the reference interpreter
// (driver/run) and programs compiled by a backend (runtime/program), on NumPy arrays or anything
// else that speaks DLPack (PyTorch CPU tensors): inputs are read in place, outputs handed over
// without a copy. The GIL is released while weft works.
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <memory>
#include <mutex>

#include "core/target.h"
#include "driver/run.h"
#include "python/src/arrays.h"
#include "python/src/bindings.h"
#include "runtime/program.h"
#include "verify/equivalence.h"

namespace weft::python {
namespace {

using InputF64 = nb::ndarray<const double, nb::c_contig, nb::device::cpu>;
using InputF32 = nb::ndarray<const float, nb::c_contig, nb::device::cpu>;

// Throws UserError unless `arrays` match the program's inputs in number and shape.
template <class Array>
void check_inputs(const Graph& g, const std::vector<Array>& arrays) {
  if (arrays.size() != g.inputs.size())
    throw UserError(fmt::format("{} takes {} input{}, given {}",
                                g.name.empty() ? "the program" : g.name, g.inputs.size(),
                                g.inputs.size() == 1 ? "" : "s", arrays.size()));
  for (size_t i = 0; i < arrays.size(); ++i) {
    const Value& v = g.value(g.inputs[i]);
    Shape given;
    for (size_t d = 0; d < arrays[i].ndim(); ++d)
      given.push_back(static_cast<int64_t>(arrays[i].shape(d)));
    if (given != v.type.shape)
      throw UserError(fmt::format("input {}: expected shape {} ({}), given an array of shape {}",
                                  v.name, shape_str(v.type.shape), v.type.str(), shape_str(given)));
  }
}

nb::list run_interpreter(const Graph& g, const std::vector<InputF64>& arrays, bool f32) {
  check_inputs(g, arrays);
  std::vector<Tensor<double>> inputs;
  for (size_t i = 0; i < arrays.size(); ++i) {
    const double* p = arrays[i].data();
    inputs.emplace_back(g.type(g.inputs[i]).shape, std::vector<double>(p, p + arrays[i].size()));
  }
  std::vector<Tensor<double>> outputs;
  {
    nb::gil_scoped_release release;
    RunOptions options;
    options.f32 = f32;
    outputs = run_graph(g, inputs, options);
  }
  nb::list result;
  for (Tensor<double>& t : outputs) {
    if (f32)
      result.append(owning_array(std::vector<float>(t.data.begin(), t.data.end()), t.shape));
    else
      result.append(owning_array(std::move(t.data), t.shape));
  }
  return result;
}

nb::dict verify(const Graph& a, const Graph& b, double target_error, uint64_t seed, int threads) {
  VerifyOptions options;
  options.target_error = target_error;
  options.seed = seed;
  options.threads = threads;
  VerifyResult r;
  {
    nb::gil_scoped_release release;
    check_signatures(a, b);
    r = verify_equivalent(a, b, options);
  }
  if (r.verdict == Verdict::error) throw UserError(r.message);
  nb::dict d;
  d["verdict"] = verdict_name(r.verdict);
  d["equivalent"] = r.verdict == Verdict::equivalent;
  d["bound"] = r.bound;
  d["error_bound_log2"] = r.bound > 0 ? std::floor(std::log2(r.bound)) : -INFINITY;
  d["tests"] = r.tests_run;
  d["message"] = r.message;
  d["output"] = r.output;
  d["element"] = r.element;
  d["float_error"] = r.floats ? nb::object(nb::float_(r.floats->worst_f32_error())) : nb::none();
  d["numerically_acceptable"] = r.floats ? nb::object(nb::bool_(r.floats->acceptable)) : nb::none();
  return d;
}

// A program compiled by a backend and loaded into this process. One call at a time (the runtime
// reuses its buffers): a lock serializes callers from several Python threads.
class Executable {
 public:
  Executable(Graph graph, const std::string& target_name, const std::string& backend_name,
             const std::string& cache_dir)
      : graph_(std::move(graph)), target_(&target_by_name(target_name)) {
    if (backend_name.empty()) {
      backend_ = target_->kind == TargetKind::cpu ? Backend::cpu : Backend::cuda;
    } else {
      std::optional<Backend> b = backend_by_name(backend_name);
      if (!b)
        throw UserError(
            fmt::format("unknown backend '{}'; use cpu, cuda or cuda-emulation", backend_name));
      backend_ = *b;
    }
    if (backend_target_kind(backend_) != target_->kind)
      throw UserError(fmt::format("backend {} does not run {} programs (target {})",
                                  backend_name_of(),
                                  target_->kind == TargetKind::cpu ? "CPU" : "GPU", target_->name));
    BuildOptions build;
    build.cache_dir = cache_dir;
    nb::gil_scoped_release release;
    require_backend(backend_);  // before compiling: without a device there is nothing to run on
    program_ = compile_program(graph_, *target_, backend_, build);
  }

  nb::list call(const std::vector<InputF32>& arrays) {
    check_inputs(graph_, arrays);
    std::vector<std::vector<float>> inputs;
    for (const InputF32& a : arrays) inputs.emplace_back(a.data(), a.data() + a.size());
    std::vector<std::vector<float>> outputs;
    {
      nb::gil_scoped_release release;
      std::lock_guard lock(mutex_);
      outputs = program_->run(inputs);
    }
    nb::list result;
    for (size_t i = 0; i < outputs.size(); ++i)
      result.append(owning_array(std::move(outputs[i]), graph_.type(graph_.outputs[i]).shape));
    return result;
  }

  nb::dict time(const std::vector<InputF32>& arrays, int warmup, int reps) {
    check_inputs(graph_, arrays);
    if (warmup < 0 || reps < 1) throw UserError("time: warmup must be >= 0 and reps >= 1");
    std::vector<std::vector<float>> inputs;
    for (const InputF32& a : arrays) inputs.emplace_back(a.data(), a.data() + a.size());
    Timing t;
    {
      nb::gil_scoped_release release;
      std::lock_guard lock(mutex_);
      t = program_->time(inputs, warmup, reps);
    }
    nb::dict d;
    d["median_us"] = t.median_s * 1e6;
    d["min_us"] = t.min_s * 1e6;
    d["max_us"] = t.max_s * 1e6;
    d["reps"] = t.reps;
    return d;
  }

  std::string backend_name_of() const { return std::string(backend_name(backend_)); }
  const std::string& target_name() const { return target_->name; }
  const std::string& source() const { return program_->source(); }
  const std::string& artifact() const { return program_->artifact(); }
  bool from_cache() const { return program_->from_cache(); }

 private:
  Graph graph_;
  const Target* target_;
  Backend backend_ = Backend::cpu;
  std::unique_ptr<weft::Program> program_;
  std::mutex mutex_;
};

}  // namespace

void bind_execute(nb::module_& m) {
  m.def("run", &run_interpreter, nb::arg("graph"), nb::arg("inputs"), nb::arg("f32"));
  m.def("verify", &verify, nb::arg("a"), nb::arg("b"), nb::arg("target_error"), nb::arg("seed"),
        nb::arg("threads"));
  nb::class_<Executable>(m, "Executable")
      .def(nb::init<Graph, std::string, std::string, std::string>(), nb::arg("graph"),
           nb::arg("target"), nb::arg("backend"), nb::arg("cache_dir"))
      .def("__call__", &Executable::call)
      .def("time", &Executable::time)
      .def_prop_ro("backend", &Executable::backend_name_of)
      .def_prop_ro("target", &Executable::target_name)
      .def_prop_ro("source", &Executable::source)
      .def_prop_ro("artifact", &Executable::artifact)
      .def_prop_ro("from_cache", &Executable::from_cache);
}

}  // namespace weft::python
