// A decode's start: seeded weights, drawn in parallel chunks, and the first step's inputs.
#include "mpk/runtime/decode_data.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "core/dtype_convert.h"
#include "core/error.h"
#include "core/parallel.h"

namespace weft {

namespace {

// theta^(-2i/dh) for i < dh/2: the rotary tables of position p are cos/sin(p * inv_freq[i]).
std::vector<double> rope_inv_freq(double theta, int64_t dh) {
  std::vector<double> f(static_cast<size_t>(dh / 2));
  for (int64_t i = 0; i < dh / 2; ++i)
    f[static_cast<size_t>(i)] =
        std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(dh));
  return f;
}

// Seeded draws: the held embedding table is stream 0, the weight at plan input i stream i + 1.
// Each stream is drawn in chunks of kSeedChunk values, every chunk from its own engine seeded by
// (seed, stream, chunk), so the chunks fill in parallel (core/parallel.h: std::threads, which
// ThreadSanitizer sees through, unlike oneTBB) and the values do not depend on the thread count
// (a 0.6B-shaped step's 596 M values took 30 s drawn from one engine).
constexpr int64_t kSeedChunk = int64_t{1} << 16;

struct Draw {
  uint64_t stream = 0;
  bool normal = false;
  float scale = 1.0f;
  bool gain = false;
  DType declared = DType::f32;
};

void fill_stream(const DecodeOptions& o, std::vector<float>& w, const Draw& d) {
  const int64_t n = static_cast<int64_t>(w.size());
  const int64_t chunks = (n + kSeedChunk - 1) / kSeedChunk;
  parallel_for_index(chunks, 0, [&](int64_t c) {
    std::seed_seq seq{static_cast<uint32_t>(o.seed), static_cast<uint32_t>(o.seed >> 32),
                      static_cast<uint32_t>(d.stream), static_cast<uint32_t>(c)};
    std::mt19937_64 rng(seq);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::normal_distribution<float> nd(0.0f, static_cast<float>(o.normal_std));
    const int64_t end = std::min(n, (c + 1) * kSeedChunk);
    for (int64_t j = c * kSeedChunk; j < end; ++j) {
      float v = d.normal ? (d.gain ? 1.0f : 0.0f) + nd(rng) : u(rng) * d.scale;
      if (d.declared != DType::f32) v = round_to_dtype(v, d.declared);
      w[static_cast<size_t>(j)] = v;
    }
  });
}

void fill_weights(const ProgramPlan& plan, const DecodeOptions& o, DecodeStart& s) {
  const DecodeInterface& i = s.interface;
  const bool normal =
      o.init == WeightInit::normal || (o.init == WeightInit::automatic && i.emb.has_value());
  if (!i.emb) {
    s.embedding.resize(static_cast<size_t>(i.vocab * i.dim));
    fill_stream(o, s.embedding, Draw{0, false, 1.0f, false, DType::f32});
    if (o.keep_weights) s.weights.push_back({"embedding", {i.vocab, i.dim}, s.embedding});
  }
  for (size_t k = 0; k < plan.inputs.size(); ++k) {
    const std::string& name = plan.inputs[k];
    const Shape& shape = plan.find_tensor(name)->shape;
    std::vector<float>& w = s.inputs[k];
    w.assign(static_cast<size_t>(numel(shape)), 0.0f);
    if (i.is_state_input(k)) continue;
    const float rows = static_cast<float>(shape.size() >= 2 ? shape[shape.size() - 2] : 1);
    auto declared = o.declared.find(name);
    fill_stream(o, w,
                Draw{k + 1, normal, 1.0f / std::sqrt(rows), numel(shape) == shape.back(),
                     declared != o.declared.end() ? declared->second : DType::f32});
    if (o.keep_weights) s.weights.push_back({name, shape, w});
  }
}

}  // namespace

void DecodeStart::write_step_inputs(int64_t pos, int token,
                                    std::vector<std::vector<float>>& in) const {
  const DecodeInterface& i = interface;
  for (int64_t p = 0; p < i.ctx; ++p) in[i.m][static_cast<size_t>(p)] = p < pos ? 1.0f : 0.0f;
  if (i.emb) {
    const std::vector<float>& e = in[*i.emb];
    for (int64_t j = 0; j < i.dim; ++j)
      in[i.x][static_cast<size_t>(j)] = e[static_cast<size_t>(j * i.vocab + token)];
  } else {
    std::copy_n(embedding.begin() + token * i.dim, i.dim, in[i.x].begin());
  }
  if (i.cos) {
    const int64_t half = i.rope_dim / 2;
    for (int64_t k = 0; k < half; ++k) {
      const double a = static_cast<double>(pos) * inv_freq[static_cast<size_t>(k)];
      const auto lo = static_cast<size_t>(k), hi = static_cast<size_t>(k + half);
      in[*i.cos][lo] = in[*i.cos][hi] = static_cast<float>(std::cos(a));
      in[*i.sin][lo] = in[*i.sin][hi] = static_cast<float>(std::sin(a));
    }
  }
}

DecodeStart decode_start(const ProgramPlan& plan, const DecodeOptions& options) {
  DecodeStart s;
  s.interface = decode_interface(plan);
  const DecodeInterface& i = s.interface;
  if (options.tokens < 1 || options.tokens > i.ctx)
    throw UserError(fmt::format("{} tokens: the cache holds {} positions", options.tokens, i.ctx));
  s.tokens = options.prompt.empty() ? std::vector<int>{options.first_token} : options.prompt;
  for (int t : s.tokens)
    if (t < 0 || t >= i.vocab)
      throw UserError(fmt::format("token {} outside the vocabulary of {}", t, i.vocab));
  if (i.cos) s.inv_freq = rope_inv_freq(options.rope_theta, i.rope_dim);
  s.inputs.resize(plan.inputs.size());
  fill_weights(plan, options, s);
  s.write_step_inputs(0, s.tokens[0], s.inputs);
  return s;
}

}  // namespace weft
