// weft.optimize's core: driver/optimize on a worker thread while the calling (main) thread waits
// with the GIL released, waking every 50 ms to run Python's signal handlers (PyErr_CheckSignals
// with the GIL reacquired briefly): a KeyboardInterrupt, or one raised by the progress callback,
// stops the search through OptimizeOptions::should_stop, and the result holds what was found.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "driver/optimize.h"
#include "driver/optimize_report.h"
#include "python/src/bindings.h"
#include "search/config.h"

namespace weft::python {
namespace {

// Python's json module turns the JSON texts into dicts: one conversion, no hand-written walk.
nb::object json_to_python(const nlohmann::json& j) {
  return nb::module_::import_("json").attr("loads")(nb::str(j.dump().c_str()));
}

// A configuration from JSON text holding {key: value} (weft.optimize's keywords) and a map of
// {key: flag text} (python -m weft's flags), each checked as the CLI checks its own.
SearchConfig make_config(const std::string& values_json, const nb::dict& flag_texts,
                         const std::string& config_path) {
  SearchConfig config = config_path.empty() ? SearchConfig{} : SearchConfig::load(config_path);
  nlohmann::json values = nlohmann::json::parse(values_json);
  for (auto& [key, value] : values.items()) {
    bool known = false;
    for (const SearchConfigField& f : search_config_fields()) known = known || f.key == key;
    if (!known)
      throw UserError(
          fmt::format("weft.optimize: unknown option '{}' (see weft.config_fields())", key));
    config.set(key, value, SourceLoc{}, key);
  }
  for (auto [key, text] : flag_texts) {
    std::string k = nb::cast<std::string>(key);
    for (const SearchConfigField& f : search_config_fields())
      if (f.key == k)
        config.set(k, config_flag_value(f, nb::cast<std::string>(text)), SourceLoc{},
                   std::string(f.flag));
  }
  target_by_name(config.target);  // a clear error for an unknown name
  return config;
}

nb::dict progress_dict(const OptimizeProgress& p) {
  nb::dict d;
  d["phase"] = p.phase == OptimizeProgress::Phase::search ? "search" : "verify";
  d["search_done"] = p.search_done;
  d["elapsed_s"] = p.elapsed_s;
  d["states"] = p.states;
  d["pruned"] = p.pruned;
  d["block_graphs"] = p.block_graphs;
  d["candidates"] = p.candidates;
  d["best_predicted_us"] = p.best_predicted_s * 1e6;
  d["memory_held_bytes"] = p.memory_held_bytes;
  d["memory_budget_bytes"] = p.memory_budget_bytes;
  d["checked"] = p.checked;
  d["kept"] = p.kept;
  d["line"] = optimize_progress_line(p);
  return d;
}

// What the Python side of a run asked for: stop, and why.
struct StopState {
  std::atomic<bool> stop{false};
  std::atomic<bool> interrupted{false};  // a KeyboardInterrupt (signal or callback)
  std::exception_ptr callback_error;     // any other exception of the callback (GIL held)
};

// Call with the GIL held and a Python error set: a KeyboardInterrupt asks to stop and keep what
// was found; anything else stops and is raised when optimize returns.
void on_python_error(StopState& state, nb::python_error& e) {
  if (e.matches(PyExc_KeyboardInterrupt))
    state.interrupted = true;
  else if (!state.callback_error)
    state.callback_error = std::make_exception_ptr(e);
  state.stop = true;
}

OptimizeResult run_optimize(const Graph& program, const SearchConfig& config,
                            const std::string& checkpoint, nb::object on_progress,
                            double progress_interval_s, bool& interrupted) {
  StopState state;
  OptimizeOptions options;
  options.checkpoint_path = checkpoint;
  options.progress_interval_s = progress_interval_s;
  options.should_stop = [&state] { return state.stop.load(); };
  if (!on_progress.is_none())
    options.on_progress = [&state, &on_progress](const OptimizeProgress& p) {
      nb::gil_scoped_acquire gil;
      if (state.callback_error) return;  // already failed once: stay quiet
      try {
        on_progress(progress_dict(p));
      } catch (nb::python_error& e) {
        on_python_error(state, e);
      }
    };

  OptimizeResult result;
  std::exception_ptr failure;
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  {
    nb::gil_scoped_release release;
    std::thread worker([&] {
      try {
        result = optimize(program, config, options);
      } catch (...) {
        failure = std::current_exception();
      }
      std::lock_guard lock(mutex);
      done = true;
      finished.notify_all();
    });
    std::unique_lock lock(mutex);
    while (!finished.wait_for(lock, std::chrono::milliseconds(50), [&] { return done; })) {
      lock.unlock();
      {
        nb::gil_scoped_acquire gil;
        if (PyErr_CheckSignals() != 0) {
          nb::python_error e;  // takes the raised exception
          on_python_error(state, e);
        }
      }
      lock.lock();
    }
    lock.unlock();
    worker.join();
  }
  if (failure) std::rethrow_exception(failure);
  if (state.callback_error) std::rethrow_exception(state.callback_error);
  interrupted = state.interrupted;
  return result;
}

}  // namespace

void bind_optimize(nb::module_& m) {
  nb::class_<OptimizeResult>(m, "OptimizeResult")
      .def_prop_ro("top",
                   [](const OptimizeResult& r) {
                     nb::list graphs;
                     for (const RankedCandidate& c : r.top) graphs.append(nb::cast(Graph(c.graph)));
                     return graphs;
                   })
      .def_prop_ro("program", [](const OptimizeResult& r) { return Graph(r.program); })
      .def_prop_ro("predicted_us",
                   [](const OptimizeResult& r) {
                     nb::list us;
                     for (const RankedCandidate& c : r.top) us.append(c.predicted_s * 1e6);
                     return us;
                   })
      .def_prop_ro("error_bounds",
                   [](const OptimizeResult& r) {
                     nb::list bounds;
                     for (const RankedCandidate& c : r.top) bounds.append(c.verification.bound);
                     return bounds;
                   })
      .def_prop_ro("f32_errors",
                   [](const OptimizeResult& r) {
                     nb::list errors;
                     for (const RankedCandidate& c : r.top) errors.append(c.verification.f32_error);
                     return errors;
                   })
      .def_prop_ro("input_predicted_us",
                   [](const OptimizeResult& r) { return r.program_predicted_s * 1e6; })
      .def_prop_ro("stop_reason",
                   [](const OptimizeResult& r) { return std::string(stop_reason_name(r.stop)); })
      .def("summary_json",
           [](const OptimizeResult& r, const std::string& input_file) {
             return json_to_python(optimize_summary_json(r, input_file));
           })
      .def("timing_json",
           [](const OptimizeResult& r) { return json_to_python(optimize_timing_json(r)); })
      .def("candidate_text",
           [](const OptimizeResult& r, size_t index) {
             if (index >= r.top.size()) throw nb::index_error();
             return candidate_file_text(r.top[index], static_cast<int>(index + 1), r.config.target);
           })
      .def("summary_text", &optimize_summary_text)
      .def("write",
           [](const OptimizeResult& r, const std::string& dir, const std::string& input_file) {
             return write_optimize_report(dir, r, input_file);
           });

  m.def(
      "optimize",
      [](const Graph& program, const std::string& values_json, const nb::dict& flag_texts,
         const std::string& config_path, const std::string& checkpoint, nb::object on_progress,
         double progress_interval_s) {
        SearchConfig config = make_config(values_json, flag_texts, config_path);
        bool interrupted = false;
        OptimizeResult r = run_optimize(program, config, checkpoint, on_progress,
                                        progress_interval_s, interrupted);
        return nb::make_tuple(std::move(r), interrupted);
      },
      nb::arg("program"), nb::arg("values_json"), nb::arg("flag_texts"), nb::arg("config_path"),
      nb::arg("checkpoint"), nb::arg("on_progress").none(), nb::arg("progress_interval_s"));

  m.def("config_fields", [] {
    nb::list fields;
    nlohmann::json defaults = SearchConfig{}.to_json();
    for (const SearchConfigField& f : search_config_fields()) {
      nb::dict d;
      d["key"] = std::string(f.key);
      d["flag"] = std::string(f.flag);
      d["doc"] = std::string(f.doc);
      d["accepted"] = std::string(f.accepted);
      d["is_flag"] = f.form == SearchConfigField::Form::flag;
      d["default"] = json_to_python(defaults.at(std::string(f.key)));
      fields.append(d);
    }
    return fields;
  });
}

}  // namespace weft::python
