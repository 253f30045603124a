// Compiling generated C++ with the host compiler, caching the shared object, loading and running.
#include "runtime/runtime.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/cpu/emit_cpu.h"
#include "core/error.h"
#include "lower/pipeline.h"

namespace weft {

namespace {

// Mirrors the weft_rt struct of cpu_runtime_abi().
struct Rt {
  void (*parallel_for)(int64_t n, void (*fn)(void*, int64_t), void* ctx);
};

void tbb_parallel_for(int64_t n, void (*fn)(void*, int64_t), void* ctx) {
  // Tasks write disjoint outputs, so results do not depend on how TBB splits the range.
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, n), [&](const tbb::blocked_range<int64_t>& r) {
    for (int64_t i = r.begin(); i != r.end(); ++i) fn(ctx, i);
  });
}

const Rt kRt{tbb_parallel_for};

using EntryFn = void (*)(const Rt*, const float* const*, float* const*, float*);

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::string cache_directory(const CompileOptions& options) {
  if (!options.cache_dir.empty()) return options.cache_dir;
  if (const char* d = std::getenv("WEFT_CACHE_DIR"); d && *d) return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return std::string(d) + "/weft";
  if (const char* d = std::getenv("HOME"); d && *d) return std::string(d) + "/.cache/weft";
  return "/tmp/weft-cache";
}

CompiledProgram::~CompiledProgram() {
  if (handle_) dlclose(handle_);
}

void CompiledProgram::run(const std::vector<const float*>& inputs,
                          const std::vector<float*>& outputs) const {
  WEFT_CHECK(inputs.size() == plan_.inputs.size() && outputs.size() == plan_.outputs.size(),
             "run: {} inputs / {} outputs given, the plan has {} / {}", inputs.size(),
             outputs.size(), plan_.inputs.size(), plan_.outputs.size());
  reinterpret_cast<EntryFn>(entry_)(&kRt, inputs.data(), outputs.data(), workspace_.data());
}

std::vector<std::vector<float>> CompiledProgram::run(
    const std::vector<std::vector<float>>& inputs) const {
  if (inputs.size() != plan_.inputs.size())
    throw UserError(fmt::format("the program takes {} inputs, {} were given", plan_.inputs.size(),
                                inputs.size()));
  std::vector<const float*> in;
  for (size_t i = 0; i < inputs.size(); ++i) {
    int64_t want = numel(plan_.find_tensor(plan_.inputs[i])->shape);
    if (static_cast<int64_t>(inputs[i].size()) != want)
      throw UserError(fmt::format("input {} needs {} values, {} were given", plan_.inputs[i], want,
                                  inputs[i].size()));
    in.push_back(inputs[i].data());
  }
  std::vector<std::vector<float>> outs;
  std::vector<float*> out;
  for (const std::string& name : plan_.outputs)
    outs.emplace_back(static_cast<size_t>(numel(plan_.find_tensor(name)->shape)), 0.0f);
  for (auto& o : outs) out.push_back(o.data());
  run(in, out);
  return outs;
}

std::vector<Tensor<double>> run_on_cpu(const Graph& graph,
                                       const std::vector<Tensor<double>>& inputs) {
  auto prog = compile_program(graph, target_by_name("cpu"));
  std::vector<std::vector<float>> in;
  for (const auto& t : inputs) in.emplace_back(t.data.begin(), t.data.end());
  auto outs = prog->run(in);
  std::vector<Tensor<double>> result;
  for (size_t i = 0; i < outs.size(); ++i)
    result.emplace_back(prog->plan().find_tensor(prog->plan().outputs[i])->shape,
                        std::vector<double>(outs[i].begin(), outs[i].end()));
  return result;
}

std::unique_ptr<CompiledProgram> compile_program(const Graph& graph, const Target& target,
                                                 const CompileOptions& options) {
  if (target.kind != TargetKind::cpu)
    throw UserError(fmt::format(
        "target '{}' has no runtime backend in this build; `weft compile --target {}` writes its "
        "kernel plan",
        target.name, target.name));
  return compile_plan(lower_graph(graph, target), options);
}

std::unique_ptr<CompiledProgram> compile_plan(const ProgramPlan& plan,
                                              const CompileOptions& options) {
  namespace fs = std::filesystem;
  std::unique_ptr<CompiledProgram> prog(new CompiledProgram());
  prog->plan_ = plan;
  prog->source_ = emit_cpu_source(plan);
  std::string command_base = options.compiler + " " + options.flags;
  std::string key = fmt::format("{:016x}", fnv1a(command_base + "\n" + prog->source_));
  fs::path dir = cache_directory(options);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec && options.cache_dir.empty()) {
    // A read-only home (CI sandboxes): fall back to the temp directory.
    dir = fs::temp_directory_path() / "weft-cache";
    ec.clear();
    fs::create_directories(dir, ec);
  }
  if (ec)
    throw UserError(
        fmt::format("cannot create the cache directory {}: {}", dir.string(), ec.message()));
  fs::path so = dir / (key + ".so");
  prog->artifact_ = so.string();
  prog->from_cache_ = fs::exists(so);
  if (!prog->from_cache_) {
    // Compile to a private name and rename, so concurrent compilers never see a partial file.
    std::string tag = fmt::format("{}.{}", key, getpid());
    fs::path src = dir / (tag + ".cpp"), tmp = dir / (tag + ".so.tmp"), log = dir / (tag + ".log");
    std::ofstream(src) << prog->source_;
    std::string cmd = fmt::format("{} -o '{}' '{}' -lopenblas > '{}' 2>&1", command_base,
                                  tmp.string(), src.string(), log.string());
    int rc = std::system(cmd.c_str());
    if (rc != 0) {
      std::string msg = read_file(log.string());
      if (msg.size() > 4000) msg = msg.substr(0, 4000);
      WEFT_CHECK(false, "the generated C++ did not compile ({}; source kept at {}):\n{}", cmd,
                 src.string(), msg);
    }
    fs::rename(tmp, so);
    fs::rename(src, dir / (key + ".cpp"), ec);
    fs::remove(log, ec);
  }
  prog->handle_ = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  WEFT_CHECK(prog->handle_ != nullptr, "cannot load {}: {}", so.string(), dlerror());
  prog->entry_ = dlsym(prog->handle_, "weft_main");
  WEFT_CHECK(prog->entry_ != nullptr, "{} has no weft_main", so.string());
  prog->workspace_.assign(static_cast<size_t>(plan.workspace_bytes / 4 + 1), 0.0f);
  return prog;
}

}  // namespace weft
