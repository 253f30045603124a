// The decode loop's host work between steps: greedy argmax, the next embedding, the KV cache
// append and the mask; the same hooks drive the task-graph run and the sequential one.
#include "mpk/decode_demo.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include "core/error.h"

namespace weft {

namespace {

class DecodeSession {
 public:
  DecodeSession(const ProgramPlan& plan, const DecodeOptions& o) : plan_(plan), o_(o) {
    x_ = input("X");
    m_ = input("M");
    logits_ = output("LOGITS");
    const Shape& xs = tensor("X").shape;
    const Shape& ms = tensor("M").shape;
    if (xs.size() != 2 || xs[0] != 1 || ms.size() != 3)
      throw UserError(fmt::format("{}: X must be [1, D] and M [1, 1, T]", plan.name));
    dim_ = xs[1];
    ctx_ = ms[2];
    vocab_ = numel(tensor("LOGITS").shape);
    if (o.tokens < 1 || o.tokens > ctx_)
      throw UserError(fmt::format("{} tokens: the cache holds {} positions", o.tokens, ctx_));
    if (o.first_token < 0 || o.first_token >= vocab_)
      throw UserError(
          fmt::format("first token {} outside the vocabulary of {}", o.first_token, vocab_));
    for (int l = 0; plan.find_tensor(fmt::format("Kc{}", l)); ++l) {
      Layer y{input(fmt::format("Kc{}", l)), input(fmt::format("Vc{}", l)),
              output(fmt::format("KN{}", l)), output(fmt::format("VN{}", l)),
              tensor(fmt::format("Kc{}", l)).shape};
      if (y.shape.size() != 3 || y.shape[0] * y.shape[1] != dim_ || y.shape[2] != ctx_)
        throw UserError(
            fmt::format("{}: Kc{} must be [H, dh, T] with H dh = {}", plan.name, l, dim_));
      layers_.push_back(y);
    }
    std::mt19937_64 rng(o.seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    embedding_.resize(static_cast<size_t>(vocab_ * dim_));
    for (float& v : embedding_) v = u(rng);
    for (size_t i = 0; i < plan.inputs.size(); ++i) {
      const std::string& n = plan.inputs[i];
      if (n == "X" || n == "M" || n.rfind("Kc", 0) == 0 || n.rfind("Vc", 0) == 0) continue;
      const Shape& s = tensor(n).shape;
      weights_.push_back({i, std::vector<float>(static_cast<size_t>(numel(s)))});
      const float scale = 1.0f / std::sqrt(static_cast<float>(s.size() >= 2 ? s[s.size() - 2] : 1));
      for (float& v : weights_.back().second) v = u(rng) * scale;
    }
    result.tokens.push_back(o.first_token);
  }

  void before(HostTensors& t, uint64_t k) {
    if (k == 1) {
      for (auto& [i, w] : weights_) t.inputs[i] = w;
      for (const Layer& y : layers_) {
        std::fill(t.inputs[y.kc].begin(), t.inputs[y.kc].end(), 0.0f);
        std::fill(t.inputs[y.vc].begin(), t.inputs[y.vc].end(), 0.0f);
      }
    }
    const int64_t pos = static_cast<int64_t>(k) - 1;  // cache positions [0, pos) are filled
    for (int64_t p = 0; p < ctx_; ++p) t.inputs[m_][p] = p < pos ? 1.0f : 0.0f;
    const int token = result.tokens.back();
    std::copy_n(embedding_.begin() + token * dim_, dim_, t.inputs[x_].begin());
  }

  void after(HostTensors& t, uint64_t k) {
    const int64_t pos = static_cast<int64_t>(k) - 1;
    for (const Layer& y : layers_) {
      const int64_t heads = y.shape[0], dh = y.shape[1];
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t j = 0; j < dh; ++j) {
          t.inputs[y.kc][(h * dh + j) * ctx_ + pos] = t.outputs[y.kn][h * dh + j];
          t.inputs[y.vc][(h * ctx_ + pos) * dh + j] = t.outputs[y.vn][h * dh + j];
        }
    }
    const auto& lg = t.outputs[logits_];
    result.logits.push_back(lg);
    result.tokens.push_back(static_cast<int>(std::max_element(lg.begin(), lg.end()) - lg.begin()));
  }

  DecodeResult result;

 private:
  struct Layer {
    size_t kc, vc, kn, vn;
    Shape shape;
  };
  const PlanBuffer& tensor(const std::string& n) const {
    const PlanBuffer* b = plan_.find_tensor(n);
    if (!b)
      throw UserError(fmt::format("{} has no tensor {} (see mpk/decode_demo.h)", plan_.name, n));
    return *b;
  }
  size_t position(const std::vector<std::string>& list, const std::string& n,
                  const char* what) const {
    auto it = std::find(list.begin(), list.end(), n);
    if (it == list.end())
      throw UserError(fmt::format("{} has no {} {} (see mpk/decode_demo.h)", plan_.name, what, n));
    return static_cast<size_t>(it - list.begin());
  }
  size_t input(const std::string& n) const { return position(plan_.inputs, n, "input"); }
  size_t output(const std::string& n) const { return position(plan_.outputs, n, "output"); }

  const ProgramPlan& plan_;
  DecodeOptions o_;
  size_t x_ = 0, m_ = 0, logits_ = 0;
  int64_t dim_ = 0, ctx_ = 0, vocab_ = 0;
  std::vector<Layer> layers_;
  std::vector<float> embedding_;
  std::vector<std::pair<size_t, std::vector<float>>> weights_;
};

}  // namespace

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

std::set<std::string> kernels_reading(const ProgramPlan& plan, const std::string& prefix) {
  std::set<std::string> out;
  for (const KernelPlan& k : plan.kernels)
    if (!k.library)
      for (const Step& s : k.loop_steps)
        if (s.kind == StepKind::load && s.inputs[0].rfind(prefix, 0) == 0) out.insert(k.name);
  return out;
}

}  // namespace weft
