// Compiling models (driver/partition_module, model/specialize, driver/compile_model,
// driver/region_cache): golden region listings, tiny_llama compiled at several bindings against the
// uncompiled VM, kernel counts, the disk cache (hits, a corrupt entry, an entry not equivalent),
// the fallback at a binding not compiled, and the CLI (`weft compile MODEL.wmod`, `weft run DIR`,
// `weft bench DIR`).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include <unistd.h>

#include "driver/compile_model.h"
#include "exec/npz.h"
#include "exec/vm.h"
#include "model/deduce.h"
#include "model/expand.h"
#include "model/parser.h"
#include "model/printer.h"
#include "tests/golden.h"
#include "tests/model_test_args.h"
#include "tests/test_util.h"
#include "tests/tiers.h"
#include "verify/equivalence.h"

WEFT_TEST_TIERS("unit", "loads_generated");
// Minutes under ASan at -O0 (runs in the optimized build: make test-heavy).
WEFT_TEST_TIERS_OF("ModelCompileLlama.*", "heavy");
WEFT_TEST_TIERS_OF("ModelCompile.TinyLlamaCompiledDirectoryMatchesTheNumpyReference", "heavy");

namespace weft {
namespace {

namespace fs = std::filesystem;

Module load(const std::string& relative, SymProver& prover) {
  return load_module(test::source_path(relative), prover);
}

// Search budgets kept small: the tests check properties of whatever the searches find.
ModelCompileOptions small_options(std::vector<SymBinding> bindings, const std::string& cache) {
  ModelCompileOptions o;
  o.bindings = std::move(bindings);
  o.search.target = "cpu";
  o.search.time_budget_s = 12;
  o.search.state_budget = 400;
  o.search.threads = 2;
  o.cache_dir = cache;
  return o;
}

std::string temp_dir(const std::string& name) {
  fs::path dir =
      fs::temp_directory_path() / fmt::format("weft_model_compile_{}_{}", name, getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

using test::flatten;

std::vector<VmValue> arguments(const Function& fn, const SymBinding& binding, uint64_t seed,
                               int64_t vocabulary = 128) {
  return test::seeded_arguments(fn, binding, seed, vocabulary);
}

// max |a - b| / max |b| over every tensor of the results; checks the reference is not trivial.
double scaled_difference(const VmValue& a, const VmValue& b) {
  std::vector<const Tensor<double>*> ta, tb;
  flatten(a, ta);
  flatten(b, tb);
  EXPECT_EQ(ta.size(), tb.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(ta.size(), tb.size()); ++i) {
    EXPECT_EQ(ta[i]->shape, tb[i]->shape);
    double scale = 0, spread = 0;
    for (double x : tb[i]->data) scale = std::max(scale, std::abs(x));
    for (double x : tb[i]->data) spread = std::max(spread, std::abs(x - tb[i]->data[0]));
    EXPECT_GT(spread, 1e-3) << "result " << i << " is (nearly) constant: a weak test";
    for (size_t k = 0; k < ta[i]->data.size(); ++k)
      worst = std::max(worst, std::abs(ta[i]->data[k] - tb[i]->data[k]) / scale);
  }
  return worst;
}

bool bit_equal(const VmValue& a, const VmValue& b) {
  std::vector<const Tensor<double>*> ta, tb;
  flatten(a, ta);
  flatten(b, tb);
  if (ta.size() != tb.size()) return false;
  for (size_t i = 0; i < ta.size(); ++i)
    if (ta[i]->shape != tb[i]->shape || ta[i]->data != tb[i]->data) return false;
  return true;
}

TEST(ModelCompile, RegionListingsMatchTheGoldenFiles) {
  for (const char* name : {"tiny_llama", "tiny_mlp", "branch", "plan_reuse", "new_ops"}) {
    SymProver prover;
    std::string path = std::string(name) == "tiny_llama" ? "examples/models/tiny_llama.wmod"
                                                         : fmt::format("tests/model/{}.wmod", name);
    Module m = expand_composites(load(path, prover), prover);
    EXPECT_TRUE(test::matches_golden(regions_str(partition_module(m, {})),
                                     fmt::format("tests/golden/model/{}.regions.txt", name)));
  }
}

// On every fixture and region bound: regions hold only table operators the search takes, at most
// the bound, each connected, live-ins defined before the region's first binding.
TEST(ModelCompile, RegionsAreBoundedConnectedRunsOfSearchableOperators) {
  for (const fs::path& file : test::model_fixtures()) {
    for (int bound : {1, 3, 8}) {
      SymProver prover;
      Module m = expand_composites(load_module(file.string(), prover), prover);
      PartitionOptions po;
      po.max_region_ops = bound;
      for (const ModelRegion& r : partition_module(m, po)) {
        const Function* f = m.find_function(r.function);
        const Block& blk = f->blocks[static_cast<size_t>(r.block)];
        EXPECT_LE(static_cast<int>(r.bindings.size()), bound) << file;
        std::set<std::string> before;
        for (const Param& p : f->params) before.insert(p.name);
        for (int bi = 0; bi < r.block; ++bi)
          for (const Binding& b : f->blocks[static_cast<size_t>(bi)].bindings) before.insert(b.var);
        for (int i = 0; i < r.bindings.front(); ++i)
          before.insert(blk.bindings[static_cast<size_t>(i)].var);
        for (const std::string& in : r.inputs) EXPECT_TRUE(before.count(in)) << file << " " << in;
        std::set<std::string> inside;
        for (size_t k = 0; k < r.bindings.size(); ++k) {
          const Binding& b = blk.bindings[static_cast<size_t>(r.bindings[k])];
          ASSERT_EQ(b.call.kind, CallKind::op) << file << " " << b.var;
          // Model-only operators are region boundaries: no µGraph holds one.
          EXPECT_FALSE(is_model_only(*op_by_name(b.call.callee))) << file << " " << b.var;
          if (k > 0) {
            bool connected = false;
            for (const std::string& a : b.call.args) connected = connected || inside.count(a);
            EXPECT_TRUE(connected) << file << " " << b.var;
          }
          inside.insert(b.var);
        }
      }
    }
  }
}

// Every fixture compiles at a binding of all its variables (regions kept unsearched: the
// specialization, dispatch and replacement are under test) into a module that passes the check
// and round-trips; an entry whose return type uses a variable its body defines is reported as
// not specialized.
TEST(ModelCompile, EveryFixtureCompilesToACheckedModuleThatRoundTrips) {
  for (const fs::path& file : test::model_fixtures()) {
    SymProver prover;
    Module m = load_module(file.string(), prover);
    SymBinding binding;
    for (const auto& [name, var] : m.syms.vars())
      binding[name] = std::min<int64_t>(var.lo() + 2, var.hi().value_or(var.lo() + 2));
    ModelCompileOptions o;
    o.bindings = {binding};
    o.search_regions = false;
    ModelCompileResult r = compile_model(m, prover, o);
    check_module(r.module, prover);
    Module again =
        parse_module(print_module(r.module), file.string(), prover, file.parent_path().string());
    EXPECT_TRUE(again == r.module) << file;
    EXPECT_EQ(r.specializations.empty(), !r.skipped.empty()) << file;
    for (const std::string& s : r.skipped)
      EXPECT_NE(s.find("defined in its body"), std::string::npos) << file << ": " << s;
  }
}

// One compile of tiny_llama shared by the tests below (the searches are the expensive part).
class ModelCompileLlama : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    // One cache for the suite's processes (ctest runs each test in its own): the first searches,
    // the others are served from it. Entries are written atomically, so processes may share it.
    // It lives in the build tree of this test binary, so builds (sanitizer trees, other
    // checkouts) never share entries; entries are verified on load in any case.
    cache_ = new std::string(
        (fs::canonical("/proc/self/exe").parent_path() / "test-cache" / "model_compile_llama")
            .string());
    prover_ = new SymProver();
    original_ = new Module(load("examples/models/tiny_llama.wmod", *prover_));
    result_ = new ModelCompileResult(compile_model(*original_, *prover_, options()));
  }
  static void TearDownTestSuite() {
    delete result_;
    delete original_;
    delete prover_;
    delete cache_;
  }
  static ModelCompileOptions options() {
    return small_options({{{"b", 1}, {"n", 5}, {"p", 0}},
                          {{"b", 2}, {"n", 3}, {"p", 0}},
                          {{"b", 1}, {"n", 2}, {"p", 5}}},
                         *cache_);
  }
  static inline std::string* cache_ = nullptr;
  static inline SymProver* prover_ = nullptr;
  static inline Module* original_ = nullptr;
  static inline ModelCompileResult* result_ = nullptr;
};

TEST_F(ModelCompileLlama, CompiledModulePassesTheCheckAndRoundTrips) {
  const Module& m = result_->module;
  check_module(m, *prover_);
  std::string text = print_module(m);
  Module again = parse_module(text, "compiled.wmod", *prover_);
  EXPECT_TRUE(again == m);
  EXPECT_EQ(print_module(again), text);
  // Every entry dispatches, its body kept as ENTRY.generic.
  EXPECT_TRUE(m.find_function("prefill.generic"));
  EXPECT_TRUE(m.find_function("decode.generic"));
}

TEST_F(ModelCompileLlama, KernelCountFallsAndEveryRegionIsCompiled) {
  int before = 0, after = 0;
  ASSERT_FALSE(result_->regions.empty());
  for (const CompiledRegion& r : result_->regions) {
    EXPECT_TRUE(r.skipped.empty()) << r.function << ": " << r.skipped;
    EXPECT_FALSE(r.ugraph.empty());
    EXPECT_LE(r.kernels_after, r.kernels_before) << r.ugraph;
    before += r.kernels_before;
    after += r.kernels_after;
  }
  EXPECT_LT(after, before);
  EXPECT_EQ(result_->searched + result_->cache_hits,
            static_cast<int>(std::count_if(result_->regions.begin(), result_->regions.end(),
                                           [](const CompiledRegion& r) { return !r.shared; })));
}

// Independently of the search's own verification: each region's µGraph against the region.
TEST_F(ModelCompileLlama, EveryRegionsMicroGraphIsVerifiedAgainstItsRegion) {
  std::map<std::string, const Graph*> ugraphs;
  for (const UGraphDef& u : result_->module.ugraphs) ugraphs[u.name] = u.graph.get();
  int differing = 0;
  for (const CompiledRegion& r : result_->regions) {
    ASSERT_TRUE(ugraphs.count(r.ugraph)) << r.ugraph;
    const Graph& compiled = *ugraphs.at(r.ugraph);
    Graph source = r.source;
    source.name = compiled.name;
    differing += !(compiled == source);
    VerifyResult v = EquivalenceChecker(r.source, {}).check(compiled);
    EXPECT_EQ(v.verdict, Verdict::equivalent) << r.ugraph << ": " << v.message;
  }
  EXPECT_GT(differing, 0) << "no region changed: the check above proved nothing";
}

// Prefill at two bindings and decode at one, through compiled CPU programs, against the
// uncompiled module run operator by operator by the interpreter.
TEST_F(ModelCompileLlama, CompiledOutputsMatchTheUncompiledVm) {
  Vm reference(*original_);
  VmOptions cpu;
  cpu.ugraph_executor = UGraphExecutor::cpu;
  Vm compiled(result_->module, cpu);
  struct Case {
    const char* function;
    SymBinding binding;
  };
  for (const Case& c : {Case{"prefill", {{"b", 1}, {"n", 5}, {"p", 0}}},
                        Case{"prefill", {{"b", 2}, {"n", 3}, {"p", 0}}},
                        Case{"decode", {{"b", 1}, {"n", 2}, {"p", 5}}}}) {
    auto args = arguments(*original_->find_function(c.function), c.binding, 7);
    VmValue want = reference.run(c.function, args);
    VmValue got = compiled.run(c.function, args);
    EXPECT_LT(scaled_difference(got, want), 1e-4) << c.function << " at " << binding_str(c.binding);
    // The compiled µGraphs write their f32 outputs straight into planned storage and read their
    // operands there: poisoned storage and no plan at all give the same bits.
    VmOptions poisoned = cpu, unplanned = cpu;
    poisoned.poison = true;
    unplanned.plan = false;
    EXPECT_TRUE(bit_equal(Vm(result_->module, poisoned).run(c.function, args), got));
    EXPECT_TRUE(bit_equal(Vm(result_->module, unplanned).run(c.function, args), got));
  }
}

// At a binding no specialization covers, the dispatch runs the original body: bit-equal to the
// uncompiled module (no µGraph ran).
TEST_F(ModelCompileLlama, ABindingNotCompiledRunsTheOriginalBody) {
  Vm reference(*original_);
  Vm compiled(result_->module);
  auto args = arguments(*original_->find_function("prefill"), {{"b", 3}, {"n", 2}, {"p", 0}}, 9);
  VmValue want = reference.run("prefill", args);
  EXPECT_TRUE(bit_equal(compiled.run("prefill", args), want));
}

TEST_F(ModelCompileLlama, SecondCompileIsServedFromTheCache) {
  ModelCompileResult again = compile_model(*original_, *prover_, options());
  EXPECT_EQ(again.searched, 0);
  EXPECT_EQ(again.cache_hits, result_->searched + result_->cache_hits);
  EXPECT_TRUE(again.warnings.empty());
  EXPECT_TRUE(again.module == result_->module);
}

// `weft compile` of tiny_llama at two prefill and two decode bindings, then the independent NumPy
// implementation's prefill and decode steps through `weft run DIR` (the steps at other bindings
// take the original body).
TEST(ModelCompile, TinyLlamaCompiledDirectoryMatchesTheNumpyReference) {
  std::string work = temp_dir("llama_numpy");
  auto [rc, out] = test::run_weft(fmt::format(
      "compile {} -o {}/out --bind b=1,n=5,p=0 --bind b=2,n=3,p=0 --bind b=1,n=1,p=5 --bind "
      "b=2,n=2,p=4 --time-budget 8 --states 300 --cache {}/cache",
      test::source_path("examples/models/tiny_llama.wmod"), work, work));
  ASSERT_EQ(rc, 0) << out;
  test::run_numpy_reference("examples/models/tiny_llama_reference.py", "weft_tiny_llama_compiled",
                            fmt::format("--compiled {}/out", work));
  fs::remove_all(work);
}

TEST(ModelCompile, ACorruptCacheEntryIsIgnoredWithAWarning) {
  std::string cache = temp_dir("corrupt_cache");
  SymProver prover;
  Module m = load("tests/model/tiny_mlp.wmod", prover);
  ModelCompileOptions o = small_options({{{"b", 2}, {"n", 4}}}, cache);
  ModelCompileResult first = compile_model(m, prover, o);
  ASSERT_GE(first.searched, 2);
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(cache)) entries.push_back(e.path());
  std::sort(entries.begin(), entries.end());
  ASSERT_EQ(static_cast<int>(entries.size()), first.searched);
  std::ofstream(entries[0]) << "{\"key\": \"truncated";
  ModelCompileResult second = compile_model(m, prover, o);
  EXPECT_EQ(second.searched, 1);
  EXPECT_EQ(second.cache_hits, first.searched - 1);
  ASSERT_EQ(second.warnings.size(), 1u);
  EXPECT_NE(second.warnings[0].find(entries[0].filename().string()), std::string::npos);
  // The entry was written again: a third compile is all hits.
  ModelCompileResult third = compile_model(m, prover, o);
  EXPECT_EQ(third.searched, 0);
  EXPECT_TRUE(third.warnings.empty());
  fs::remove_all(cache);
}

// A well-formed entry whose µGraph computes something else (one multiplication made an addition,
// as a stale or hostile file could hold): the verifier rejects it on load, the region is searched
// again and the entry rewritten.
TEST(ModelCompile, ACacheEntryThatIsNotEquivalentIsSearchedAgain) {
  std::string cache = temp_dir("wrong_cache");
  SymProver prover;
  Module m = load("tests/model/tiny_mlp.wmod", prover);
  ModelCompileOptions o = small_options({{{"b", 2}, {"n", 4}}}, cache);
  ModelCompileResult first = compile_model(m, prover, o);
  ASSERT_GE(first.searched, 2);
  ASSERT_TRUE(first.warnings.empty());
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(cache)) entries.push_back(e.path());
  std::sort(entries.begin(), entries.end());
  fs::path edited;
  for (const fs::path& entry : entries) {
    nlohmann::json j = nlohmann::json::parse(std::ifstream(entry));
    std::string ugraph = j.at("ugraph").get<std::string>();
    size_t at = ugraph.find(" mul(");
    if (at == std::string::npos) continue;
    ugraph.replace(at, 5, " add(");
    j["ugraph"] = ugraph;
    std::ofstream(entry) << j.dump(1) << "\n";
    edited = entry;
    break;
  }
  ASSERT_FALSE(edited.empty()) << "no cached µGraph holds a mul to edit";
  ModelCompileResult second = compile_model(m, prover, o);
  EXPECT_EQ(second.searched, 1);
  EXPECT_EQ(second.cache_hits, first.searched - 1);
  ASSERT_EQ(second.warnings.size(), 1u);
  EXPECT_NE(second.warnings[0].find(edited.filename().string()), std::string::npos);
  EXPECT_NE(second.warnings[0].find("not verified equivalent"), std::string::npos);
  ModelCompileResult third = compile_model(m, prover, o);
  EXPECT_EQ(third.searched, 0);
  EXPECT_TRUE(third.warnings.empty());
  fs::remove_all(cache);
}

TEST(ModelCompile, CliCompilesRunsAndBenchesAModelDirectory) {
  std::string work = temp_dir("cli");
  std::string model = test::source_path("tests/model/tiny_mlp.wmod");
  auto [rc, out] = test::run_weft(fmt::format(
      "compile {} -o {}/out --bind b=2,n=4 --bind b=1,n=3 --time-budget 6 --states 300 --cache "
      "{}/cache",
      model, work, work));
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("region 1/"), std::string::npos) << out;
  nlohmann::json summary = nlohmann::json::parse(test::read_text(work + "/out/summary.json"));
  EXPECT_EQ(summary["totals"]["regions"].get<int>(), 4);
  EXPECT_LT(summary["totals"]["kernels_after"].get<int>(),
            summary["totals"]["kernels_before"].get<int>());
  EXPECT_TRUE(fs::exists(work + "/out/model.wmod"));
  EXPECT_TRUE(fs::exists(work + "/out/code"));
  auto [rc2, out2] = test::run_weft(fmt::format(
      "compile {} -o {}/out2 --bind b=2,n=4 --bind b=1,n=3 --cache {}/cache", model, work, work));
  ASSERT_EQ(rc2, 0) << out2;
  EXPECT_NE(out2.find("cache: 4 hits, 0 searched"), std::string::npos) << out2;

  // Inputs at a compiled binding, run through the directory and through the original module.
  SymProver prover;
  Module m = load("tests/model/tiny_mlp.wmod", prover);
  auto args = arguments(m.functions[0], {{"b", 2}, {"n", 4}}, 3);
  std::map<std::string, Tensor<double>> arrays;
  for (size_t i = 0; i < args.size(); ++i)
    arrays[m.functions[0].params[i].name] = *args[i].tensor();
  write_npz(work + "/in.npz", arrays);
  auto [rc3, out3] = test::run_weft(
      fmt::format("run {}/out --inputs {}/in.npz --outputs {}/got.npz", work, work, work));
  ASSERT_EQ(rc3, 0) << out3;
  Vm reference(m);
  VmValue want = reference.run("main", args);
  NpyArray got = read_npz(work + "/got.npz").at("result");
  const Tensor<double>& w = *want.tensor();
  ASSERT_EQ(got.tensor.data.size(), w.data.size());
  double scale = 0, worst = 0;
  for (double x : w.data) scale = std::max(scale, std::abs(x));
  for (size_t i = 0; i < w.data.size(); ++i)
    worst = std::max(worst, std::abs(got.tensor.data[i] - w.data[i]) / scale);
  EXPECT_LT(worst, 1e-4);
  auto [rc4, out4] = test::run_weft(
      fmt::format("bench {}/out --inputs {}/in.npz --reps 1 --warmup 0", work, work));
  EXPECT_EQ(rc4, 0) << out4;
  EXPECT_NE(out4.find("per-operator CPU kernels"), std::string::npos) << out4;
  // An ONNX model is refused with a clear message until the importer lands.
  std::ofstream(work + "/m.onnx") << "not a model";
  auto [rc5, out5] = test::run_weft(fmt::format("compile {}/m.onnx -o {}/o5", work, work));
  EXPECT_EQ(rc5, 1) << out5;
  EXPECT_NE(out5.find("ONNX"), std::string::npos) << out5;
  fs::remove_all(work);
}

}  // namespace
}  // namespace weft
