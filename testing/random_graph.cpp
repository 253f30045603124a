// Random valid µGraphs: every op is dry-run through shape inference before it is added, so the
// generator only ever builds well-typed graphs and never depends on builder errors for control.
#include "testing/random_graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <functional>
#include <optional>
#include <random>

#include "core/rational.h"

namespace weft {
namespace {

using Rng = std::mt19937_64;

// The operators the generator draws from, read off the op table: per level (kernel, block,
// thread) the pre-defined operators allowed there, matmul twice (contractions make the
// interesting graphs), with and without composites; and the binary and attribute-free unary
// operators a thread graph starts with.
struct Menu {
  std::array<std::vector<OpKind>, 3> plain, with_composites;
  std::vector<OpKind> binary, plain_unary;
};

const Menu& menu() {
  static const Menu m = [] {
    Menu m;
    for (const OpInfo& info : all_ops())
      for (size_t level = 0; level < 3; ++level) {
        if (!(info.levels & (1u << level))) continue;
        switch (info.op_class) {
          case OpClass::unary:
          case OpClass::binary:
          case OpClass::reduction:
          case OpClass::movement:
            m.plain[level].push_back(info.kind);
            break;
          case OpClass::matmul:
            m.plain[level].insert(m.plain[level].end(), 2, info.kind);
            break;
          case OpClass::composite:
            m.with_composites[level].push_back(info.kind);
            break;
          case OpClass::structure:
          case OpClass::hierarchy:
          case OpClass::model:
            break;
        }
      }
    for (size_t level = 0; level < 3; ++level)
      m.with_composites[level].insert(m.with_composites[level].begin(), m.plain[level].begin(),
                                      m.plain[level].end());
    for (const OpInfo& info : all_ops()) {
      if (info.op_class == OpClass::binary) m.binary.push_back(info.kind);
      if (info.op_class == OpClass::unary && info.attrs.empty()) m.plain_unary.push_back(info.kind);
    }
    return m;
  }();
  return m;
}

class Generator {
 public:
  Generator(uint64_t seed, const RandomGraphOptions& o) : rng_(seed), o_(o) {}

  Graph run(uint64_t seed) {
    dtype_ = pick(o_.dtypes);
    GraphBuilder b(Level::kernel, fmt::format("random_{}", seed));
    int n_inputs = uniform(1, std::max(1, o_.max_inputs));
    std::vector<ValueId> pool;
    for (int i = 0; i < n_inputs; ++i) {
      Shape s(static_cast<size_t>(uniform(1, std::max(1, o_.max_rank))));
      for (int64_t& d : s) d = pick(o_.dim_sizes);
      pool.push_back(b.add_input(fmt::format("X{}", i), TensorType{dtype_, s}));
    }
    int n_ops = uniform(1, std::max(1, o_.max_ops));
    size_t first_op_value = b.graph().values.size();
    for (int i = 0; i < n_ops; ++i) {
      if (o_.allow_kernels && chance(o_.kernel_prob)) {
        for (int attempt = 0; attempt < 4; ++attempt)
          if (kernel_op(b, pool)) break;
      } else {
        for (int attempt = 0; attempt < 8; ++attempt)
          if (pre_defined_op(b, pool, Level::kernel, Stage::loop, "v")) break;
      }
    }
    if (b.graph().values.size() == first_op_value) {  // make sure something is computed
      ValueId r = b.add(OpKind::exp, {pool[0]}, {}, fresh("v"));
      pool.push_back(r);
    }
    // Outputs: results nobody reads first (they would otherwise be dead), then others.
    const Graph& g = b.graph();
    auto consumers = g.consumers();
    std::vector<ValueId> sinks, others;
    for (size_t v = first_op_value; v < g.values.size(); ++v)
      (consumers[v].empty() ? sinks : others).push_back(static_cast<ValueId>(v));
    std::shuffle(others.begin(), others.end(), rng_);
    int n_out = uniform(1, 2);
    std::vector<ValueId> outs = sinks;
    for (ValueId v : others)
      if (static_cast<int>(outs.size()) < n_out) outs.push_back(v);
    for (ValueId v : outs) b.add_output(v);
    return std::move(b).finish();
  }

 private:
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(uniform(0, static_cast<int>(v.size()) - 1))];
  }
  std::string fresh(const char* prefix) { return fmt::format("{}{}", prefix, counter_++); }

  static std::vector<int64_t> divisors(int64_t n) {
    std::vector<int64_t> d;
    for (int64_t i = 1; i <= n; ++i)
      if (n % i == 0) d.push_back(i);
    return d;
  }

  // Shape inference without touching the graph: nullopt if the op would be ill-typed or too big.
  std::optional<std::vector<TensorType>> dry_run(const Graph& g, OpKind kind,
                                                 const std::vector<ValueId>& in, Attrs attrs) {
    const OpInfo& info = op_info(kind);
    std::vector<TensorType> types;
    for (ValueId v : in) types.push_back(g.type(v));
    try {
      complete_attrs(info, attrs);
      auto out = info.infer(types, attrs, g.infer_context());
      for (const TensorType& t : out)
        if (numel(t.shape) > o_.max_elements) return std::nullopt;
      return out;
    } catch (const UserError&) {
      return std::nullopt;
    }
  }

  // Adds `kind` if it type-checks; results go to `pool`.
  bool try_add(GraphBuilder& b, std::vector<ValueId>& pool, OpKind kind, std::vector<ValueId> in,
               Attrs attrs, Stage stage, const char* prefix) {
    auto types = dry_run(b.graph(), kind, in, attrs);
    if (!types) return false;
    std::vector<std::string> names;
    for (size_t i = 0; i < types->size(); ++i) names.push_back(fresh(prefix));
    auto out = b.add_op(kind, std::move(in), std::move(attrs), names, {}, stage);
    pool.insert(pool.end(), out.begin(), out.end());
    return true;
  }

  static bool broadcastable(const Shape& a, const Shape& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i] != b[i] && a[i] != 1 && b[i] != 1) return false;
    return true;
  }

  std::vector<ValueId> matching(const Graph& g, const std::vector<ValueId>& pool,
                                const std::function<bool(const Shape&)>& pred) {
    std::vector<ValueId> out;
    for (ValueId v : pool)
      if (pred(g.type(v).shape)) out.push_back(v);
    return out;
  }

  Rational random_rational() {
    static const char* kConsts[] = {"1/2", "-3", "1e-3", "5/7", "2", "-0.25", "1/4096"};
    return *Rational::parse(kConsts[uniform(0, 6)]);
  }

  // A random dim of a rank-r tensor, sometimes written negatively (the builder normalizes it).
  int64_t random_dim(size_t rank) {
    int64_t d = uniform(0, static_cast<int>(rank) - 1);
    return chance(0.2) ? d - static_cast<int64_t>(rank) : d;
  }

  // One pre-defined operator on values of `pool`, legal at `level`.
  bool pre_defined_op(GraphBuilder& b, std::vector<ValueId>& pool, Level level, Stage stage,
                      const char* prefix) {
    if (pool.empty()) return false;
    const Graph& g = b.graph();
    ValueId a = pick(pool);
    const Shape& s = g.type(a).shape;
    size_t r = s.size();
    const auto level_index = static_cast<size_t>(level);
    const std::vector<OpKind>& kinds =
        o_.allow_composites ? menu().with_composites[level_index] : menu().plain[level_index];
    OpKind kind = pick(kinds);
    switch (op_info(kind).op_class) {
      case OpClass::unary: {
        Attrs attrs;
        if (const AttrSpec* c = rational_attr(op_info(kind))) attrs.set(c->name, random_rational());
        return try_add(b, pool, kind, {a}, attrs, stage, prefix);
      }
      case OpClass::binary: {
        auto cands = matching(g, pool, [&](const Shape& t) { return broadcastable(s, t); });
        ValueId c = pick(cands);  // contains a itself
        return try_add(b, pool, kind, chance(0.5) ? std::vector{a, c} : std::vector{c, a}, {},
                       stage, prefix);
      }
      case OpClass::matmul: {
        if (r < 2) return false;
        auto cands = matching(g, pool, [&](const Shape& t) {
          if (t.size() != r || t[r - 2] != s[r - 1]) return false;
          for (size_t i = 0; i + 2 < r; ++i)
            if (t[i] != s[i] && t[i] != 1 && s[i] != 1) return false;
          return true;
        });
        if (cands.empty()) return false;
        return try_add(b, pool, kind, {a, pick(cands)}, {}, stage, prefix);
      }
      case OpClass::reduction: {
        int64_t d = random_dim(r);
        int64_t to = 1;
        if (chance(0.4)) to = pick(divisors(s[static_cast<size_t>(d < 0 ? d + r : d)]));
        return try_add(b, pool, kind, {a}, {{"dim", d}, {"to", to}}, stage, prefix);
      }
      case OpClass::composite: {
        Attrs attrs{{"dim", random_dim(r)}};
        if (kind == OpKind::rms_norm && chance(0.6))
          attrs.set("eps", *Rational::parse(chance(0.5) ? "1e-6" : "1/4096"));
        return try_add(b, pool, kind, {a}, attrs, stage, prefix);
      }
      case OpClass::movement:
        return movement_op(b, pool, kind, a, stage, prefix);
      case OpClass::structure:
      case OpClass::hierarchy:
      case OpClass::model:
        break;
    }
    return false;
  }

  bool movement_op(GraphBuilder& b, std::vector<ValueId>& pool, OpKind kind, ValueId a, Stage stage,
                   const char* prefix) {
    const Graph& g = b.graph();
    const Shape s = g.type(a).shape;
    size_t r = s.size();
    switch (kind) {
      case OpKind::reshape: {
        // Distribute the prime factors of numel over a random number of dims.
        std::vector<int64_t> factors;
        int64_t n = numel(s);
        for (int64_t p = 2; p * p <= n; ++p)
          while (n % p == 0) {
            factors.push_back(p);
            n /= p;
          }
        if (n > 1) factors.push_back(n);
        Shape t(static_cast<size_t>(uniform(1, std::max(1, o_.max_rank))), 1);
        for (int64_t f : factors)
          t[static_cast<size_t>(uniform(0, static_cast<int>(t.size()) - 1))] *= f;
        return try_add(b, pool, kind, {a}, {{"shape", t}}, stage, prefix);
      }
      case OpKind::concat: {
        int64_t d = uniform(0, static_cast<int>(r) - 1);
        auto cands = matching(g, pool, [&](const Shape& t) {
          if (t.size() != r) return false;
          for (size_t i = 0; i < r; ++i)
            if (static_cast<int64_t>(i) != d && t[i] != s[i]) return false;
          return true;
        });
        std::vector<ValueId> in = {a};
        int n = uniform(1, 2);
        for (int i = 0; i < n; ++i) in.push_back(pick(cands));
        return try_add(b, pool, kind, in, {{"dim", d}}, stage, prefix);
      }
      case OpKind::split: {
        int64_t d = uniform(0, static_cast<int>(r) - 1);
        auto divs = divisors(s[static_cast<size_t>(d)]);
        int64_t parts = divs[static_cast<size_t>(
            uniform(0, static_cast<int>(std::min<size_t>(divs.size(), 3)) - 1))];
        return try_add(b, pool, kind, {a}, {{"dim", d}, {"parts", parts}}, stage, prefix);
      }
      case OpKind::repeat:
        return try_add(b, pool, kind, {a},
                       {{"dim", random_dim(r)}, {"times", int64_t{uniform(1, 3)}}}, stage, prefix);
        WEFT_CASES_NOT_MOVEMENT
        break;
    }
    return false;
  }

  // A thread op over 1-2 values of `pool` (all of one stage): a short elementwise chain.
  bool thread_op(GraphBuilder& b, std::vector<ValueId>& pool, Stage stage) {
    if (pool.empty()) return false;
    const Graph& g = b.graph();
    std::vector<ValueId> operands = {pick(pool)};
    if (chance(0.5)) {
      const Shape& s = g.type(operands[0]).shape;
      ValueId c = pick(matching(g, pool, [&](const Shape& t) { return broadcastable(s, t); }));
      if (c != operands[0]) operands.push_back(c);
    }
    GraphBuilder t(Level::thread);
    std::vector<ValueId> tpool;
    for (ValueId v : operands) tpool.push_back(t.add_input(g.value(v).name, g.type(v)));
    size_t first = t.graph().values.size();
    // Every operand must be read (the checker rejects unused thread operands): two operands are
    // combined first.
    if (operands.size() == 2)
      try_add(t, tpool, pick(menu().binary), {tpool[0], tpool[1]}, {}, Stage::loop, "t");
    else
      try_add(t, tpool, pick(menu().plain_unary), {tpool[0]}, {}, Stage::loop, "t");
    int n = uniform(0, 2);
    for (int i = 0; i < n; ++i) pre_defined_op(t, tpool, Level::thread, Stage::loop, "t");
    const Graph& tg = t.graph();
    if (tg.values.size() == first) return false;
    std::vector<ValueId> results;
    for (size_t v = first; v < tg.values.size(); ++v) results.push_back(static_cast<ValueId>(v));
    std::shuffle(results.begin(), results.end(), rng_);
    results.resize(std::min<size_t>(results.size(), static_cast<size_t>(uniform(1, 2))));
    std::sort(results.begin(), results.end());
    for (ValueId v : results) t.add_output(v);
    std::vector<std::string> names;
    for (size_t i = 0; i < results.size(); ++i) names.push_back(fresh("b"));
    auto out = b.add_nested(OpKind::thread, operands, std::move(t).finish(), names, {}, stage);
    pool.insert(pool.end(), out.begin(), out.end());
    return true;
  }

  // A graph-defined kernel over 1-3 distinct values of `pool`. False (nothing added) when the
  // random choices admit no save.
  bool kernel_op(GraphBuilder& kb, std::vector<ValueId>& kpool) {
    const Graph& kg = kb.graph();
    std::vector<ValueId> operands;
    int n_operands = uniform(1, std::min(3, static_cast<int>(kpool.size())));
    for (int i = 0; i < n_operands * 2 && static_cast<int>(operands.size()) < n_operands; ++i) {
      ValueId v = pick(kpool);
      if (std::find(operands.begin(), operands.end(), v) == operands.end()) operands.push_back(v);
    }
    std::array<int64_t, 3> grid = {pick(o_.grid_sizes), 1, 1};
    if (chance(0.3)) grid[1] = pick(o_.grid_sizes);
    if (chance(0.15)) grid[2] = pick(o_.grid_sizes);
    int64_t loop = pick(o_.loop_sizes);
    static const std::vector<int64_t> kThreads = {32, 64, 128, 256};
    GraphBuilder b(Level::block);
    b.set_block_params(grid, pick(kThreads), loop);
    std::vector<ValueId> inputs;
    for (ValueId v : operands) inputs.push_back(b.add_input(kg.value(v).name, kg.type(v)));

    // Iterators: most in the loop stage, some deferred to the post stage (whole slice, once).
    std::vector<ValueId> loop_pool, post_pool, deferred;
    for (ValueId in : inputs) {
      if (chance(0.2)) {
        deferred.push_back(in);
        continue;
      }
      if (!iterator(b, in, loop_pool, Stage::loop)) deferred.push_back(in);
    }
    int n_loop = uniform(0, o_.max_block_ops);
    for (int i = 0; i < n_loop && !loop_pool.empty(); ++i) {
      if (o_.allow_threads && chance(0.15))
        thread_op(b, loop_pool, Stage::loop);
      else
        pre_defined_op(b, loop_pool, Level::block, Stage::loop, "b");
    }
    // Accumulators carry loop values out of the loop.
    int n_acc = loop_pool.empty() ? 0 : uniform(1, 3);
    for (int i = 0; i < n_acc; ++i) {
      ValueId v = pick(loop_pool);
      int which = uniform(0, 2);
      OpKind k = which == 0   ? OpKind::accum_sum
                 : which == 1 ? OpKind::accum_max
                              : OpKind::accum_concat;
      Attrs attrs;
      if (k == OpKind::accum_concat) attrs.set("dim", random_dim(b.graph().type(v).shape.size()));
      try_add(b, post_pool, k, {v}, attrs, Stage::loop, "b");
    }
    for (ValueId in : deferred) iterator(b, in, post_pool, Stage::post);
    if (post_pool.empty()) return false;
    int n_post = uniform(0, o_.max_post_ops);
    for (int i = 0; i < n_post; ++i) {
      if (o_.allow_threads && chance(0.2))
        thread_op(b, post_pool, Stage::post);
      else
        pre_defined_op(b, post_pool, Level::block, Stage::post, "b");
    }
    // Saves: every grid dim of size > 1 goes to a distinct data dim of the saved tile.
    std::vector<int> big;
    for (int gd = 0; gd < 3; ++gd)
      if (grid[gd] > 1) big.push_back(gd);
    std::vector<ValueId> cands;
    for (ValueId v : post_pool)
      if (b.graph().type(v).shape.size() >= big.size()) cands.push_back(v);
    if (cands.empty()) return false;
    std::shuffle(cands.begin(), cands.end(), rng_);
    // Prefer the latest post values (they depend on the most).
    std::stable_sort(cands.begin(), cands.end(), [](ValueId x, ValueId y) { return x > y; });
    int n_saves = uniform(1, std::min(o_.max_saves, static_cast<int>(cands.size())));
    std::vector<std::string> names;
    for (int i = 0; i < n_saves; ++i) {
      ValueId v = cands[static_cast<size_t>(i)];
      size_t rank = b.graph().type(v).shape.size();
      std::vector<int64_t> dims(rank);
      for (size_t d = 0; d < rank; ++d) dims[d] = static_cast<int64_t>(d);
      std::shuffle(dims.begin(), dims.end(), rng_);
      std::vector<int64_t> omap = {-1, -1, -1};
      for (size_t j = 0; j < big.size(); ++j) omap[static_cast<size_t>(big[j])] = dims[j];
      std::string name = fresh("k");
      if (!dry_run(b.graph(), OpKind::save, {v}, {{"omap", omap}})) return false;
      b.add_op(OpKind::save, {v}, {{"omap", omap}}, {name}, {}, Stage::post);
      names.push_back(name);
    }
    auto out = kb.add_nested(OpKind::kernel, operands, std::move(b).finish(), names);
    kpool.insert(kpool.end(), out.begin(), out.end());
    return true;
  }

  // iter with a random imap (dims the grid divides) and fmap (a dim `loop` divides, or '-';
  // always '-' in the post stage).
  bool iterator(GraphBuilder& b, ValueId in, std::vector<ValueId>& pool, Stage stage) {
    const Graph& g = b.graph();
    Shape s = g.type(in).shape;
    std::vector<int64_t> imap = {-1, -1, -1};
    std::vector<bool> used(s.size(), false);
    for (size_t gd = 0; gd < 3; ++gd) {
      if (g.grid[gd] == 1 || chance(0.3)) continue;
      std::vector<size_t> ok;
      for (size_t d = 0; d < s.size(); ++d)
        if (!used[d] && s[d] % g.grid[gd] == 0) ok.push_back(d);
      if (ok.empty()) continue;
      size_t d = pick(ok);
      used[d] = true;
      imap[gd] = static_cast<int64_t>(d);
      s[d] /= g.grid[gd];
    }
    int64_t fmap = -1;
    if (stage == Stage::loop && chance(0.8)) {
      std::vector<int64_t> ok;
      for (size_t d = 0; d < s.size(); ++d)
        if (s[d] % g.loop == 0) ok.push_back(static_cast<int64_t>(d));
      if (!ok.empty()) fmap = pick(ok);
    }
    return try_add(b, pool, OpKind::iter, {in}, {{"imap", imap}, {"fmap", fmap}}, stage, "b");
  }

  Rng rng_;
  const RandomGraphOptions& o_;
  DType dtype_ = DType::f32;
  int counter_ = 0;
};

}  // namespace

Graph random_graph(uint64_t seed, const RandomGraphOptions& options) {
  Generator gen(seed, options);
  return gen.run(seed);
}

}  // namespace weft
