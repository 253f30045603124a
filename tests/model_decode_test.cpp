// Greedy decoding with the corpus's decoder exported with its KV cache (driver/model_decode.h):
// on the VM with a growing cache and with a cache of fixed capacity, its tokens onnxruntime's;
// each step as one persistent launch in emulation, its tokens the VM's; the CLI and the errors.
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <set>

#include <unistd.h>

#include "driver/compile_to_dir.h"
#include "driver/compiled_dir.h"
#include "driver/decoder_signature.h"
#include "driver/model_decode.h"
#include "driver/model_file.h"
#include "driver/model_megakernel.h"
#include "exec/npz.h"
#include "onnx/import.h"
#include "tests/test_util.h"
#include "tests/tiers.h"
#include "tests/tiny_llama_dir.h"

WEFT_TEST_TIERS("unit", "loads_generated");
// Each step of a growing cache traced and built in emulation: the optimized build's heavy tier.
WEFT_TEST_TIERS_OF("ModelDecodeWmod.EachStep*", "heavy");

namespace weft {
namespace {

namespace fs = std::filesystem;

// Slot p holds the entry of the token fed at step p for the steps after it: 14 slots hold a decode
// of 16 steps, the prompt (5) and 11 chosen tokens, the last of them never fed.
constexpr int64_t kCapacity = 14;
constexpr int64_t kTokens = 11;

// The variable of the mask's length: the classic exporter names it, the dynamo exporter's
// torch.export infers it (examples/onnx/corpus/README.md).
std::string mask_length(const std::string& model) {
  return model.find("dynamo") != std::string::npos ? "s53" : "total_seq";
}

// onnxruntime's greedy decode of the corpus decoder (scripts/onnx_corpus.py, write_greedy).
struct Reference {
  std::vector<int64_t> prompt, tokens;  // tokens: the one after the prompt, then 32
};
Reference reference(const std::string& model) {
  const NpzArrays z =
      read_npz(test::source_path(fmt::format("examples/onnx/corpus/{}_dynamic.greedy.npz", model)));
  Reference r;
  for (double v : z.at("prompt").tensor.data) r.prompt.push_back(static_cast<int64_t>(v));
  r.tokens.push_back(static_cast<int64_t>(z.at("prompt_token").tensor.data.at(0)));
  for (double v : z.at("tokens").tensor.data) r.tokens.push_back(static_cast<int64_t>(v));
  return r;
}

class ModelDecode : public testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    work_ = new fs::path(fs::temp_directory_path() / fmt::format("weft_model_decode_{}", getpid()));
    fs::remove_all(*work_);
  }
  static void TearDownTestSuite() {
    fs::remove_all(*work_);
    delete work_;
  }
  // The decoder compiled for h100 at the decode step of kCapacity slots, with its persistent
  // kernel's plan stored; once per exporter.
  static std::string compiled(const std::string& model) {
    const fs::path out = *work_ / model;
    if (fs::exists(out / "summary.json")) return out.string();
    SymProver prover;
    OnnxImportOptions load;
    load.bounds = {{"batch", 4}, {"past_seq", 64}, {"seq", 64}, {mask_length(model), 64}};
    ModelFile file = load_model_file(
        test::source_path(fmt::format("examples/onnx/corpus/{}_dynamic.onnx", model)), prover,
        load);
    ModelDirOptions options;
    options.target = "h100";
    options.bindings = {
        {{"batch", 1}, {"seq", 1}, {"past_seq", kCapacity}, {mask_length(model), kCapacity + 1}}};
    options.time_budget_s = 4;
    options.state_budget = 100;
    options.no_build = true;
    options.cache_dir = (*work_ / "cache").string();
    compile_model_to_dir(file, prover, out.string(), options);
    return out.string();
  }
  static inline fs::path* work_ = nullptr;
};

std::vector<int64_t> first(const std::vector<int64_t>& v, size_t n) {
  return {v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n)};
}

TEST_P(ModelDecode, TheExportsDecoderFindsItsCacheByTheExportersNames) {
  if (!onnx_supported()) GTEST_SKIP() << "built without ONNX support";
  CompiledModelDir dir(compiled(GetParam()));
  const DecoderSignature sig = decoder_signature(dir, "main");
  ASSERT_EQ(sig.caches.size(), 4u);
  EXPECT_EQ(sig.caches[0].past, "past_key_values.0.key");
  EXPECT_EQ(sig.caches[0].present, "present.0.key");
  EXPECT_EQ(sig.caches[0].axis, 2);
  EXPECT_EQ(sig.caches[0].shape_of(9), (Shape{1, 2, 9, 8}));
  EXPECT_EQ(sig.batch, 1);
  EXPECT_EQ(sig.vocab, 128);
  EXPECT_FALSE(sig.fixed_cache);
}

// On the VM, interpreted µGraphs: a growing cache (the prompt in one step) and a fixed capacity
// (the prompt a token a step, slots masked until filled) both reproduce onnxruntime's tokens.
TEST_P(ModelDecode, GreedyTokensOnTheVmAreOnnxruntimes) {
  if (!onnx_supported()) GTEST_SKIP() << "built without ONNX support";
  const Reference ref = reference(GetParam());
  ASSERT_GE(std::set<int64_t>(ref.tokens.begin(), ref.tokens.end()).size(), 4u) << "trivial";
  CompiledModelDir dir(compiled(GetParam()));
  ModelDecodeOptions o;
  o.tokens = 12;
  o.executor = UGraphExecutor::interpreter;
  const ModelDecodeResult growing = decode_model(dir, ref.prompt, o);
  EXPECT_EQ(growing.tokens, first(ref.tokens, 12));
  EXPECT_EQ(growing.capacity, 0);
  EXPECT_EQ(growing.step_seconds.size(), 12u);
  EXPECT_NE(growing.note.find("a growing cache changes the binding"), std::string::npos);

  o.capacity = kCapacity;
  o.tokens = kTokens;
  const ModelDecodeResult fixed = decode_model(dir, ref.prompt, o);
  EXPECT_EQ(fixed.tokens, first(ref.tokens, kTokens));
  EXPECT_EQ(fixed.step_seconds.size(), 15u) << "5 prompt tokens and 10 chosen ones fed";
  EXPECT_EQ(fixed.compiled_steps, 15) << "every step at the binding compiled";
  EXPECT_EQ(fixed.note, "");

  o.tokens = kTokens + 1;  // needs 15 slots
  try {
    decode_model(dir, ref.prompt, o);
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("a cache of 14 slots holds a prompt of 5 and 11 new tokens at "
                               "most, not 12 (give a capacity of 15 or more)"),
              std::string::npos)
        << e.message();
  }
}

INSTANTIATE_TEST_SUITE_P(Exporters, ModelDecode,
                         testing::Values("llama_kv_classic", "llama_kv_dynamo"));

// Each step one launch of the step's persistent kernel in emulation, from the plan the directory
// stored, the cache resident: the VM's tokens (onnxruntime's), at most 12 bytes to the device a
// step (token, position, one mask element) and one row of logits back.
TEST(ModelDecodeMegakernel, EachStepIsOnePersistentLaunchWithTheVmsTokens) {
  if (!onnx_supported()) GTEST_SKIP() << "built without ONNX support";
  const fs::path work =
      fs::temp_directory_path() / fmt::format("weft_model_decode_mk_{}", getpid());
  fs::remove_all(work);
  const std::string out = (work / "dir").string();
  auto [rc, text] = test::run_weft(fmt::format(
      "compile {} -o {} --bind batch=1,seq=1,past_seq={},total_seq={} --bound batch=4 --bound "
      "past_seq=64 --bound seq=64 --bound total_seq=64 --target h100 --time-budget 4 --no-build "
      "--megakernel --cache {}",
      test::source_path("examples/onnx/corpus/llama_kv_classic_dynamic.onnx"), out, kCapacity,
      kCapacity + 1, (work / "cache").string()));
  ASSERT_EQ(rc, 0) << text;
  const Reference ref = reference("llama_kv_classic");
  CompiledModelDir dir(out);
  ModelDecodeOptions o;
  o.tokens = kTokens;
  o.path = DecodePath::megakernel;
  o.workers = 3;
  const ModelDecodeResult r = decode_model(dir, ref.prompt, o);
  EXPECT_EQ(r.capacity, kCapacity) << "the least that holds the decode";
  EXPECT_TRUE(r.stored_plan);
  EXPECT_EQ(r.compiled_steps, 15);
  EXPECT_EQ(r.tokens, first(ref.tokens, kTokens));
  // The first step's token and position come with the inputs; the last fills no slot. Each is
  // an int64, as the export declares: token, position and the mask slot, 24 bytes.
  EXPECT_DOUBLE_EQ(r.bytes_to_device_per_step, 24.0 * 14 / 15);
  EXPECT_DOUBLE_EQ(r.bytes_to_host_per_step, 128.0 * 4 * kTokens / 15)
      << "logits of the steps that choose";
  EXPECT_GT(r.setup_bytes, 100000) << "the weights and the caches, placed once";

  // The CLI prints the tokens and says how it ran.
  std::tie(rc, text) = test::run_weft(
      fmt::format("decode {} --prompt {} --tokens 4 --megakernel --capacity {} --workers 2", out,
                  fmt::join(ref.prompt, ","), kCapacity));
  ASSERT_EQ(rc, 0) << text;
  EXPECT_NE(text.find(fmt::format("{}\n", fmt::join(first(ref.tokens, 4), ","))), std::string::npos)
      << text;
  for (const char* line : {"one persistent launch a step (cuda-emulation, the plan DIR stored), "
                           "a cache of 14 slots",
                           "bytes to the device and 256 back"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  std::tie(rc, text) =
      test::run_weft(fmt::format("decode {} --prompt 1,128 --tokens 4 --megakernel", out));
  EXPECT_EQ(rc, 1);
  EXPECT_NE(text.find("token id 128 of the prompt is outside the vocabulary of 128"),
            std::string::npos)
      << text;
  std::tie(rc, text) = test::run_weft(fmt::format("decode {} --prompt 1,x --tokens 4", out));
  EXPECT_EQ(rc, 1);
  EXPECT_NE(text.find("--prompt: 'x' is not a token id"), std::string::npos) << text;
  std::tie(rc, text) =
      test::run_weft(fmt::format("decode {} --prompt 1 --megakernel --backend cpu", out));
  EXPECT_EQ(rc, 1);
  EXPECT_NE(text.find("--megakernel runs with --backend cuda or cuda-emulation"), std::string::npos)
      << text;
  fs::remove_all(work);
}

// examples/models/tiny_llama.wmod compiled at its prompt's and first step's bindings, with seeded
// weights (the directory of a .wmod holds none).
class ModelDecodeWmod : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    work_ = new fs::path(fs::temp_directory_path() /
                         fmt::format("weft_model_decode_wmod_{}", getpid()));
    fs::remove_all(*work_);
    const ModelFile model = test::compile_tiny_llama(
        *work_, "tl", {{{"b", 1}, {"n", 3}, {"p", 0}}, {{"b", 1}, {"n", 1}, {"p", 3}}}, 3);
    weights_ = new NpzArrays;
    std::mt19937_64 rng(21);
    std::normal_distribution<double> normal;
    for (const Param& p : model.module.find_function("decode")->params) {
      if (p.name == "tokens" || p.name == "pos" || p.name.starts_with("kc") ||
          p.name.starts_with("vc"))
        continue;
      Shape shape;
      for (const SymExpr& d : *p.type.dims) shape.push_back(*d.as_constant());
      Tensor<double> t(shape, 0.0);
      // Norm gains near 1, matrices scaled by their fan-in, as the NumPy reference makes them.
      const bool gain = shape.back() == numel(shape);
      for (double& v : t.data)
        v = gain ? 1 + 0.1 * normal(rng) : normal(rng) / std::sqrt(shape[shape.size() - 2]);
      (*weights_)[p.name] = NpyArray{t, false};
    }
  }
  static void TearDownTestSuite() {
    fs::remove_all(*work_);
    delete work_;
    delete weights_;
  }
  static ModelDecodeOptions options() {
    ModelDecodeOptions o;
    o.function = "decode";
    o.weights = *weights_;
    o.executor = UGraphExecutor::interpreter;
    return o;
  }
  static inline fs::path* work_ = nullptr;
  static inline NpzArrays* weights_ = nullptr;
};

TEST_F(ModelDecodeWmod, TheStepIsFoundByItsTypesWithItsPromptFunction) {
  CompiledModelDir dir((*work_ / "tl").string());
  const DecoderSignature sig = decoder_signature(dir, "decode");
  EXPECT_EQ(sig.kind, DecoderKind::positional);
  EXPECT_EQ(sig.input_ids, "tokens");
  EXPECT_EQ(sig.position_ids, "pos");
  EXPECT_EQ(sig.prefill, "prefill");
  ASSERT_EQ(sig.caches.size(), 4u);
  EXPECT_EQ(sig.caches[1].past, "vc0");
  EXPECT_EQ(sig.caches[1].present, "result.2");
  EXPECT_EQ(sig.caches[1].axis, 2);
  EXPECT_EQ(sig.caches[1].shape_of(5), (Shape{1, 2, 5, 16}));
  EXPECT_EQ(sig.weights.size(), 25u);
  EXPECT_EQ(sig.vocab, 128);
  try {
    decoder_signature(dir, "decode", "qkv");
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("the prompt function 'qkv'"), std::string::npos) << e.message();
  }
}

// The VM's greedy tokens, growing cache, and the same with each step one persistent launch in
// emulation (traced and built per step: the cache's length is the step's shape).
TEST_F(ModelDecodeWmod, EachStepAsOnePersistentLaunchGivesTheVmsTokens) {
  CompiledModelDir dir((*work_ / "tl").string());
  const std::vector<int64_t> prompt = {5, 17, 99};
  ModelDecodeOptions o = options();
  o.tokens = 3;
  const ModelDecodeResult vm = decode_model(dir, prompt, o);
  ASSERT_EQ(vm.tokens.size(), 3u);
  EXPECT_EQ(vm.compiled_steps, 2);
  o.path = DecodePath::megakernel;
  o.workers = 2;
  const ModelDecodeResult mk = decode_model(dir, prompt, o);
  EXPECT_EQ(mk.tokens, vm.tokens);
  EXPECT_EQ(mk.compiled_steps, 2);
  EXPECT_EQ(mk.capacity, 0);
  EXPECT_GT(mk.build_seconds, 0);
}

// A model that is not a decode step with its cache is refused with what is expected.
TEST(ModelDecodeErrors, AFunctionWithoutACacheIsNotADecoder) {
  const fs::path work =
      fs::temp_directory_path() / fmt::format("weft_model_decode_err_{}", getpid());
  fs::remove_all(work);
  auto [rc, text] = test::run_weft(
      fmt::format("compile {} -o {} --bind b=1,n=2 --time-budget 1 --no-build",
                  test::source_path("tests/model/tiny_mlp.wmod"), (work / "dir").string()));
  ASSERT_EQ(rc, 0) << text;
  std::tie(rc, text) =
      test::run_weft(fmt::format("decode {} --prompt 1,2 --tokens 2", (work / "dir").string()));
  EXPECT_EQ(rc, 1);
  for (const char* part :
       {"is not a decoder with its KV cache: no attention_mask and "
        "past_key_values inputs",
        "past_key_values.L.key|value", "no integer parameter int(p) giving a cache's length p"})
    EXPECT_NE(text.find(part), std::string::npos) << part << "\n" << text;
  fs::remove_all(work);
}

}  // namespace
}  // namespace weft
