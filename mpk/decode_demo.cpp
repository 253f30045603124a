// The decode loop's host work between steps: greedy argmax, the next embedding, the KV cache
// append and the mask; the same hooks drive the task-graph run and the sequential one.
#include "mpk/decode_demo.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <random>

#include "core/dtype_convert.h"
#include "core/error.h"
#include "core/parallel.h"

namespace weft {

namespace {

// A plan's tensor, its position in the inputs or outputs; UserError naming what is missing.
const PlanBuffer& tensor_of(const ProgramPlan& plan, const std::string& n) {
  const PlanBuffer* b = plan.find_tensor(n);
  if (!b) throw UserError(fmt::format("{} has no tensor {} (see mpk/decode_demo.h)", plan.name, n));
  return *b;
}
size_t position(const ProgramPlan& plan, const std::vector<std::string>& list, const std::string& n,
                const char* what) {
  auto it = std::find(list.begin(), list.end(), n);
  if (it == list.end())
    throw UserError(fmt::format("{} has no {} {} (see mpk/decode_demo.h)", plan.name, what, n));
  return static_cast<size_t>(it - list.begin());
}

// theta^(-2i/dh) for i < dh/2: the rotary tables of position p are cos/sin(p * inv_freq[i]).
std::vector<double> rope_inv_freq(double theta, int64_t dh) {
  std::vector<double> f(static_cast<size_t>(dh / 2));
  for (int64_t i = 0; i < dh / 2; ++i)
    f[static_cast<size_t>(i)] =
        std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(dh));
  return f;
}

class DecodeSession {
 public:
  DecodeSession(const ProgramPlan& plan, const DecodeOptions& o)
      : plan_(plan), o_(o), i_(decode_interface(plan)) {
    if (o.tokens < 1 || o.tokens > i_.ctx)
      throw UserError(fmt::format("{} tokens: the cache holds {} positions", o.tokens, i_.ctx));
    std::vector<int> start = o.prompt.empty() ? std::vector<int>{o.first_token} : o.prompt;
    for (int t : start)
      if (t < 0 || t >= i_.vocab)
        throw UserError(fmt::format("token {} outside the vocabulary of {}", t, i_.vocab));
    if (i_.cos) inv_freq_ = rope_inv_freq(o.rope_theta, i_.rope_dim);
    fill_weights();
    result.tokens = start;
  }

  void before(HostTensors& t, uint64_t k) {
    if (k == 1) {
      // Copied, not swapped: the tensor table points into t.inputs. Freed: a 0.6B-sized
      // program's weights are gigabytes.
      for (auto& [i, w] : weights_) {
        std::copy(w.begin(), w.end(), t.inputs[i].begin());
        std::vector<float>().swap(w);
      }
      for (const DecodeLayer& y : i_.layers) {
        std::fill(t.inputs[y.kc].begin(), t.inputs[y.kc].end(), 0.0f);
        std::fill(t.inputs[y.vc].begin(), t.inputs[y.vc].end(), 0.0f);
      }
    }
    const int64_t pos = static_cast<int64_t>(k) - 1;  // cache positions [0, pos) are filled
    for (int64_t p = 0; p < i_.ctx; ++p) t.inputs[i_.m][p] = p < pos ? 1.0f : 0.0f;
    const int64_t token = result.tokens[static_cast<size_t>(pos)];
    if (i_.emb) {
      const std::vector<float>& e = t.inputs[*i_.emb];
      for (int64_t j = 0; j < i_.dim; ++j) t.inputs[i_.x][j] = e[j * i_.vocab + token];
    } else {
      std::copy_n(embedding_.begin() + token * i_.dim, i_.dim, t.inputs[i_.x].begin());
    }
    if (i_.cos) {
      const int64_t half = i_.rope_dim / 2;
      for (int64_t i = 0; i < half; ++i) {
        const double a = static_cast<double>(pos) * inv_freq_[static_cast<size_t>(i)];
        t.inputs[*i_.cos][i] = t.inputs[*i_.cos][i + half] = static_cast<float>(std::cos(a));
        t.inputs[*i_.sin][i] = t.inputs[*i_.sin][i + half] = static_cast<float>(std::sin(a));
      }
    }
  }

  void after(HostTensors& t, uint64_t k) {
    const int64_t pos = static_cast<int64_t>(k) - 1, ctx = i_.ctx;
    for (const DecodeLayer& y : i_.layers) {
      const int64_t heads = y.heads, dh = y.head_dim;
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t j = 0; j < dh; ++j) {
          t.inputs[y.kc][(h * dh + j) * ctx + pos] = t.outputs[y.kn][h * dh + j];
          t.inputs[y.vc][(h * ctx + pos) * dh + j] = t.outputs[y.vn][h * dh + j];
        }
    }
    const auto& lg = t.outputs[i_.logits];
    result.logits.push_back(lg);
    // Within the prompt the next token is given; after it, the greedy choice.
    if (result.tokens.size() == static_cast<size_t>(k))
      result.tokens.push_back(
          static_cast<int>(std::max_element(lg.begin(), lg.end()) - lg.begin()));
  }

  // The host-held embedding table (empty with EMB) and the rotary inverse frequencies.
  const std::vector<float>& embedding() const { return embedding_; }
  const std::vector<double>& inv_freq() const { return inv_freq_; }

  DecodeResult result;

 private:
  // Seeded draws: the host embedding table is stream 0, the weight at plan input i stream i + 1.
  // Each stream is drawn in chunks of kSeedChunk values, every chunk from its own engine seeded
  // by (seed, stream, chunk), so the chunks fill in parallel (core/parallel.h: std::threads, which
  // ThreadSanitizer sees through, unlike oneTBB) and the values do not depend on the
  // thread count (a 0.6B-shaped step's 596 M values took 30 s drawn from one engine).
  static constexpr int64_t kSeedChunk = int64_t{1} << 16;
  void fill_stream(std::vector<float>& w, uint64_t stream, bool normal, float scale, bool gain,
                   DType declared) const {
    const int64_t n = static_cast<int64_t>(w.size());
    const int64_t chunks = (n + kSeedChunk - 1) / kSeedChunk;
    parallel_for_index(chunks, 0, [&](int64_t c) {
      std::seed_seq seq{static_cast<uint32_t>(o_.seed), static_cast<uint32_t>(o_.seed >> 32),
                        static_cast<uint32_t>(stream), static_cast<uint32_t>(c)};
      std::mt19937_64 rng(seq);
      std::uniform_real_distribution<float> u(-1.0f, 1.0f);
      std::normal_distribution<float> d(0.0f, static_cast<float>(o_.normal_std));
      const int64_t end = std::min(n, (c + 1) * kSeedChunk);
      for (int64_t j = c * kSeedChunk; j < end; ++j) {
        float v = normal ? (gain ? 1.0f : 0.0f) + d(rng) : u(rng) * scale;
        if (declared != DType::f32) v = round_to_dtype(v, declared);
        w[static_cast<size_t>(j)] = v;
      }
    });
  }

  void fill_weights() {
    const bool normal =
        o_.init == WeightInit::normal || (o_.init == WeightInit::automatic && i_.emb.has_value());
    if (!i_.emb) {
      embedding_.resize(static_cast<size_t>(i_.vocab * i_.dim));
      fill_stream(embedding_, 0, false, 1.0f, false, DType::f32);
      if (o_.keep_weights) result.weights.push_back({"embedding", {i_.vocab, i_.dim}, embedding_});
    }
    for (size_t i = 0; i < plan_.inputs.size(); ++i) {
      const std::string& name = plan_.inputs[i];
      if (is_decode_state_input(name)) continue;
      const Shape& s = tensor_of(plan_, name).shape;
      std::vector<float> w(static_cast<size_t>(numel(s)));
      const bool gain = numel(s) == s.back();
      const float scale = 1.0f / std::sqrt(static_cast<float>(s.size() >= 2 ? s[s.size() - 2] : 1));
      auto d = o_.declared.find(name);
      fill_stream(w, i + 1, normal, scale, gain, d != o_.declared.end() ? d->second : DType::f32);
      if (o_.keep_weights) result.weights.push_back({name, s, w});
      weights_.push_back({i, std::move(w)});
    }
  }

  const ProgramPlan& plan_;
  DecodeOptions o_;
  DecodeInterface i_;
  std::vector<float> embedding_;
  std::vector<double> inv_freq_;
  std::vector<std::pair<size_t, std::vector<float>>> weights_;
};

}  // namespace

bool is_decode_state_input(const std::string& n) {
  return n == "X" || n == "M" || n == "COS" || n == "SIN" || n.rfind("Kc", 0) == 0 ||
         n.rfind("Vc", 0) == 0;
}

DecodeInterface decode_interface(const ProgramPlan& plan) {
  auto tensor = [&](const std::string& n) -> const PlanBuffer& { return tensor_of(plan, n); };
  auto input = [&](const std::string& n) { return position(plan, plan.inputs, n, "input"); };
  auto output = [&](const std::string& n) { return position(plan, plan.outputs, n, "output"); };
  DecodeInterface i;
  i.x = input("X");
  i.m = input("M");
  i.logits = output("LOGITS");
  const Shape& xs = tensor("X").shape;
  const Shape& ms = tensor("M").shape;
  if (xs.size() != 2 || xs[0] != 1 || ms.size() != 3)
    throw UserError(fmt::format("{}: X must be [1, D] and M [1, 1, T]", plan.name));
  i.dim = xs[1];
  i.ctx = ms[2];
  i.vocab = numel(tensor("LOGITS").shape);
  for (int l = 0; plan.find_tensor(fmt::format("Kc{}", l)); ++l) {
    const std::string kc = fmt::format("Kc{}", l), vc = fmt::format("Vc{}", l);
    const std::string kn = fmt::format("KN{}", l), vn = fmt::format("VN{}", l);
    const Shape& ks = tensor(kc).shape;
    if (ks.size() != 3 || ks[2] != i.ctx)
      throw UserError(fmt::format("{}: {} must be [Hkv, dh, {}]", plan.name, kc, i.ctx));
    const int64_t heads = ks[0], dh = ks[1];
    if (tensor(vc).shape != Shape{heads, i.ctx, dh})
      throw UserError(fmt::format("{}: {} must be [{}, {}, {}]", plan.name, vc, heads, i.ctx, dh));
    for (const std::string& n : {kn, vn})
      if (numel(tensor(n).shape) != heads * dh)
        throw UserError(
            fmt::format("{}: {} must hold {} values (Hkv dh)", plan.name, n, heads * dh));
    i.layers.push_back({input(kc), input(vc), output(kn), output(vn), heads, dh});
  }
  if (plan.find_tensor("COS")) {
    i.cos = input("COS");
    i.sin = input("SIN");
    i.rope_dim = numel(tensor("COS").shape);
    if (i.rope_dim % 2 != 0 || numel(tensor("SIN").shape) != i.rope_dim ||
        (!i.layers.empty() && i.layers[0].head_dim != i.rope_dim))
      throw UserError(
          fmt::format("{}: COS and SIN must hold dh values, dh even (the head size)", plan.name));
  }
  if (plan.find_tensor("EMB")) {
    i.emb = input("EMB");
    if (tensor("EMB").shape != Shape{i.dim, i.vocab})
      throw UserError(fmt::format("{}: EMB must be [{}, {}] (D, V)", plan.name, i.dim, i.vocab));
  }
  return i;
}

DecodeStart decode_start(const ProgramPlan& plan, const DecodeOptions& options) {
  DecodeSession s(plan, options);
  HostTensors t(plan);
  s.before(t, 1);
  return DecodeStart{std::move(t.inputs), s.embedding(), s.result.tokens, s.inv_freq()};
}

DecodeResult decode_on_host(const ProgramPlan& plan, const CpuProgram& program,
                            const DeviceGraph& graph, const DecodeOptions& options,
                            HostRunOptions run_options) {
  DecodeSession s(plan, options);
  HostTensors t(plan);
  run_options.iterations = static_cast<uint64_t>(options.tokens);
  s.result.run = run_on_host(
      plan, program, graph, t, run_options, [&](uint64_t k) { s.before(t, k); },
      [&](uint64_t k) { s.after(t, k); });
  return std::move(s.result);
}

DecodeResult decode_sequential(const ProgramPlan& plan, const CpuProgram& program,
                               const DecodeOptions& options) {
  DecodeSession s(plan, options);
  HostTensors t(plan);
  const auto start = std::chrono::steady_clock::now();
  run_sequential(
      program, t, static_cast<uint64_t>(options.tokens), [&](uint64_t k) { s.before(t, k); },
      [&](uint64_t k) { s.after(t, k); });
  s.result.run.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return std::move(s.result);
}

DecodeResult decode_with(const ProgramPlan& plan, const DecodeOptions& options,
                         const DecodeStep& step) {
  DecodeSession s(plan, options);
  HostTensors t(plan);
  double seconds = 0;
  for (uint64_t k = 1; k <= static_cast<uint64_t>(options.tokens); ++k) {
    s.before(t, k);
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::vector<float>> outs = step(t.inputs);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    WEFT_CHECK(outs.size() == t.outputs.size(), "a decode step returned {} outputs, not {}",
               outs.size(), t.outputs.size());
    for (size_t i = 0; i < outs.size(); ++i) {
      WEFT_CHECK(outs[i].size() == t.outputs[i].size(), "decode step output {} has {} values", i,
                 outs[i].size());
      std::copy(outs[i].begin(), outs[i].end(), t.outputs[i].begin());
    }
    s.after(t, k);
  }
  s.result.run.seconds = seconds;
  return std::move(s.result);
}

std::set<std::string> kernels_reading(const ProgramPlan& plan, const std::string& prefix) {
  std::set<std::string> out;
  for (const KernelPlan& k : plan.kernels)
    if (!k.library)
      for (const Step& s : k.loop_steps)
        if (s.kind == StepKind::load && s.inputs[0].rfind(prefix, 0) == 0) out.insert(k.name);
  return out;
}

}  // namespace weft
