// The mega-kernel from Python (driver/mpk_program.h, driver/mpk_run.h): a program prepared for a
// platform, compiled to its task graph (with the text after any step), run against its reference,
// and a decode step decoded with its loop on the device. The GIL is released while weft works.
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>

#include "driver/mpk_program.h"
#include "driver/mpk_run.h"
#include "mpk/tgraph_text.h"
#include "python/src/arrays.h"
#include "python/src/bindings.h"

namespace weft::python {
namespace {

using InputF32 = nb::ndarray<const float, nb::c_contig, nb::device::cpu>;

MpkProgramOptions program_options(const std::string& platform, int workers,
                                  const std::string& dispatch, uint32_t schedulers,
                                  bool decode_loop, const std::string& data_dependent_reads) {
  MpkProgramOptions o;
  o.platform = mpk_platform_by_name(platform);
  o.workers = workers;
  o.dispatch = dispatch_by_name(dispatch);
  o.schedulers = schedulers;
  o.decode_loop = decode_loop;
  o.data_dependent_reads = data_dependent_reads;
  return o;
}

// The task graph's text after every step up to `stop_after` (empty: all), in order.
std::vector<std::pair<std::string, std::string>> megakernel_steps(
    const Graph& g, const std::string& platform, int workers, const std::string& dispatch,
    bool decode_loop, const std::string& stop_after) {
  std::vector<std::pair<std::string, std::string>> steps;
  nb::gil_scoped_release release;
  const MpkProgram p =
      prepare_megakernel(g, program_options(platform, workers, dispatch, 1, decode_loop, ""));
  compile_megakernel(p, stop_after, [&](const std::string& step, const TaskGraph& tg) {
    steps.emplace_back(step, print_tgraph(tg));
  });
  return steps;
}

class MegakernelCore {
 public:
  MegakernelCore(const Graph& g, const std::string& platform, int workers,
                 const std::string& dispatch, uint32_t schedulers, bool decode_loop,
                 const std::string& data_dependent_reads) {
    nb::gil_scoped_release release;
    runner_ = std::make_unique<MegakernelRunner>(
        prepare_megakernel(g, program_options(platform, workers, dispatch, schedulers, decode_loop,
                                              data_dependent_reads)));
  }

  std::string task_graph() const { return print_tgraph(runner_->compiled().graph); }

  nb::dict summary() const {
    const MpkProgram& p = runner_->program();
    const MpkCompiled& c = runner_->compiled();
    const TaskGraphStats s = stats_of(c.graph);
    nb::dict d;
    d["name"] = p.name;
    d["platform"] = std::string(mpk_platform_name(p.platform));
    d["target"] = p.target->name;
    d["decoder"] = p.decoder();
    d["operators"] = c.graph.ops.size();
    d["tasks"] = s.tasks;
    d["empty_tasks"] = s.empty_tasks;
    d["jit_tasks"] = s.jit_tasks;
    d["events"] = s.events;
    d["events_before_fusion"] = c.events_before_fusion;
    d["workers"] = c.graph.workers;
    d["blob_bytes"] = c.blob.size();
    return d;
  }

  // The plan's inputs, in order: (name, shape).
  std::vector<std::pair<std::string, std::vector<int64_t>>> inputs() const {
    std::vector<std::pair<std::string, std::vector<int64_t>>> out;
    const ProgramPlan& plan = runner_->program().plan;
    for (const std::string& name : plan.inputs)
      if (const PlanBuffer* b = plan.find_tensor(name); b && b->role == TensorRole::input)
        out.emplace_back(name, std::vector<int64_t>(b->shape.begin(), b->shape.end()));
    return out;
  }

  nb::dict run(const std::vector<InputF32>& arrays, uint64_t iterations, uint64_t delay_seed,
               bool trace) const {
    MpkRunOptions o;
    o.iterations = iterations;
    o.delay_seed = delay_seed;
    o.trace = trace;
    if (!arrays.empty()) {
      const auto expected = inputs();
      if (arrays.size() != expected.size())
        throw UserError(fmt::format("{} takes {} inputs, given {}", runner_->program().name,
                                    expected.size(), arrays.size()));
      for (size_t i = 0; i < arrays.size(); ++i) {
        Shape given;
        for (size_t d = 0; d < arrays[i].ndim(); ++d)
          given.push_back(static_cast<int64_t>(arrays[i].shape(d)));
        if (given != expected[i].second)
          throw UserError(fmt::format("input {}: expected shape {}, given an array of shape {}",
                                      expected[i].first, shape_str(expected[i].second),
                                      shape_str(given)));
        o.inputs.emplace_back(arrays[i].data(), arrays[i].data() + arrays[i].size());
      }
    }
    MpkRunReport r;
    {
      nb::gil_scoped_release release;
      r = runner_->run(o);
    }
    const ProgramPlan& plan = runner_->program().plan;
    nb::list outputs;
    for (size_t i = 0; i < r.outputs.size(); ++i) {
      const PlanBuffer* b = plan.find_tensor(plan.outputs[i]);
      outputs.append(owning_array(std::move(r.outputs[i]), b ? b->shape : Shape{}));
    }
    nb::dict d;
    d["outputs"] = outputs;
    d["same"] = r.same;
    d["seconds"] = r.seconds;
    d["trace"] = r.trace_json;
    return d;
  }

  nb::dict decode(int tokens, const std::vector<int>& prompt, uint64_t seed, double init_std,
                  int tokens_per_launch, bool logits, bool per_kernel) const {
    MpkDecodeOptions o;
    o.decode.tokens = tokens;
    o.decode.prompt = prompt;
    o.decode.seed = seed;
    o.decode.normal_std = init_std;
    o.decode.declared = runner_->program().declared;
    o.tokens_per_launch = tokens_per_launch;
    o.logits = logits;
    o.per_kernel = per_kernel;
    MpkDecodeReport r;
    {
      nb::gil_scoped_release release;
      r = runner_->decode(o);
    }
    nb::dict d;
    d["tokens"] = r.resident.decode.tokens;
    d["launches"] = r.resident.launches;
    d["seconds"] = r.resident.decode.run.seconds;
    nb::dict others;
    for (const auto& [name, decode] : r.per_kernel) others[name.c_str()] = decode.decode.tokens;
    d["per_kernel_tokens"] = others;
    if (r.same) d["same"] = *r.same;
    return d;
  }

 private:
  std::unique_ptr<MegakernelRunner> runner_;
};

}  // namespace

void bind_megakernel(nb::module_& m) {
  m.def("megakernel_steps", &megakernel_steps, nb::arg("graph"), nb::arg("platform"),
        nb::arg("workers"), nb::arg("dispatch"), nb::arg("decode_loop"), nb::arg("stop_after"));
  m.def("megakernel_passes", [] { return mpk_passes(); });
  nb::class_<MegakernelCore>(m, "MegakernelCore")
      .def(nb::init<const Graph&, std::string, int, std::string, uint32_t, bool, std::string>(),
           nb::arg("graph"), nb::arg("platform"), nb::arg("workers"), nb::arg("dispatch"),
           nb::arg("schedulers"), nb::arg("decode_loop"), nb::arg("data_dependent_reads"))
      .def("task_graph", &MegakernelCore::task_graph)
      .def("summary", &MegakernelCore::summary)
      .def("inputs", &MegakernelCore::inputs)
      .def("run", &MegakernelCore::run, nb::arg("inputs"), nb::arg("iterations"),
           nb::arg("delay_seed"), nb::arg("trace"))
      .def("decode", &MegakernelCore::decode, nb::arg("tokens"), nb::arg("prompt"), nb::arg("seed"),
           nb::arg("init_std"), nb::arg("tokens_per_launch"), nb::arg("logits"),
           nb::arg("per_kernel"));
}

}  // namespace weft::python
