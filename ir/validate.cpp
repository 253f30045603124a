// The validity checker: re-derives every fact a µGraph must satisfy, whatever built it.
//
// One pass over each graph in statement order, recursing into bodies where their operator
// appears, so violations come out in program order. Each statement reports at most its first
// violation, and a statement that failed does not make its readers fail again (no cascades).
#include "ir/validate.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>

namespace weft {

namespace {

const char* axis_name(int g) {
  return g == 0 ? "x" : g == 1 ? "y" : "z";
}

std::string kib(int64_t bytes) {
  double k = static_cast<double>(bytes) / 1024.0;
  std::string s = fmt::format("{:.1f}", k);
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  return s + " KiB";
}

// What a block-graph value is, for the stage and path rules.
enum class Kind : uint8_t {
  operand,      // a block-graph input: a whole tensor in device memory
  loop,         // produced in the loop stage (an iterator's tile or computed from them)
  accumulated,  // an accumulator's result: exists after the loop
  post,         // produced in the post stage
  saved,        // a save's result: the kernel's output in device memory
};

class Checker {
 public:
  explicit Checker(const Target& target) : target_(target) {}

  std::vector<UserError> take() { return std::move(errors_); }

  void check_kernel_graph(const Graph& g) {
    if (g.level != Level::kernel) {
      report(g.loc, fmt::format("expected a kernel graph (a whole program), got a {} graph",
                                level_name(g.level)));
      return;
    }
    check_graph(g, nullptr);
  }

 private:
  // Per-graph state of the single pass.
  struct Scope {
    const Graph* g;
    std::vector<bool> defined;
    std::vector<bool> poisoned;  // produced by a statement that already reported an error
    std::vector<int> producer;   // op index, -1 for inputs or nothing
    std::vector<Kind> kind;      // block graphs only
    std::map<std::string, ValueId> names;
    bool seen_post = false;
  };

  void report(const SourceLoc& loc, std::string message) {
    errors_.emplace_back(loc, std::move(message));
  }

  static const SourceLoc& pick(const SourceLoc& a, const SourceLoc& b) { return a.known() ? a : b; }

  std::string vname(const Scope& s, ValueId v) const {
    if (v < 0 || static_cast<size_t>(v) >= s.g->values.size()) return fmt::format("#{}", v);
    return s.g->values[v].name;
  }

  std::string line_of(const SourceLoc& loc) const {
    return loc.known() ? fmt::format(" (line {})", loc.line) : std::string();
  }

  // Defines value `v` in `s`; throws on an out-of-range id, a second definition or a reused name.
  void define(Scope& s, ValueId v, const SourceLoc& at) {
    const Graph& g = *s.g;
    if (v < 0 || static_cast<size_t>(v) >= g.values.size())
      throw UserError(at, fmt::format("this statement defines value #{}, which is not in the "
                                      "graph's value table",
                                      v));
    const Value& val = g.values[v];
    if (s.defined[v])
      throw UserError(pick(val.loc, at),
                      fmt::format("'{}' is defined twice; every value is defined once", val.name));
    s.defined[v] = true;  // even when misnamed, so that its readers do not fail again
    auto [it, fresh] = s.names.emplace(val.name, v);
    if (!fresh)
      throw UserError(pick(val.loc, at),
                      fmt::format("'{}' is already defined{}; every name is assigned once",
                                  val.name, line_of(g.values[it->second].loc)));
  }

  void check_graph(const Graph& g, const Op* parent) {
    Scope s;
    s.g = &g;
    size_t n = g.values.size();
    s.defined.assign(n, false);
    s.poisoned.assign(n, false);
    s.producer.assign(n, -1);
    s.kind.assign(n, Kind::operand);
    for (size_t i = 0; i < g.ops.size(); ++i)
      for (ValueId v : g.ops[i].outputs)
        if (v >= 0 && static_cast<size_t>(v) < n && s.producer[v] < 0)
          s.producer[v] = static_cast<int>(i);

    const SourceLoc& header = parent ? pick(g.loc, parent->loc) : g.loc;
    for (ValueId v : g.inputs) {
      try {
        define(s, v, header);
      } catch (const UserError& e) {
        errors_.push_back(e);
      }
    }
    if (g.level == Level::block) check_block_header(g, header);
    if (g.level != Level::kernel) check_inputs_used(s, header);

    for (size_t i = 0; i < g.ops.size(); ++i) {
      const Op& op = g.ops[i];
      bool failed = false;
      try {
        check_op(s, static_cast<int>(i));
      } catch (const UserError& e) {
        errors_.push_back(e);
        failed = true;
      }
      if (!failed && op.body) {
        size_t before = errors_.size();
        check_graph(*op.body, &op);
        failed = errors_.size() != before;
      }
      for (ValueId v : op.outputs) {
        if (v < 0 || static_cast<size_t>(v) >= n) continue;
        if (!s.defined[v]) {
          try {
            define(s, v, op.loc);
          } catch (const UserError& e) {
            if (!failed) errors_.push_back(e);
            failed = true;
          }
        }
        if (failed) s.poisoned[v] = true;
      }
    }
    check_outputs(s, header);
  }

  // Grid, block size and shared memory against the target.
  void check_block_header(const Graph& g, const SourceLoc& at) {
    for (int a = 0; a < 3; ++a) {
      if (g.grid[a] < 1) {
        report(at,
               fmt::format("grid dim {} is {}; grid dims must be >= 1", axis_name(a), g.grid[a]));
        return;
      }
      if (g.grid[a] > target_.max_grid[a]) {
        report(at, fmt::format("grid dim {} has {} blocks, more than the {} {} allows",
                               axis_name(a), g.grid[a], target_.max_grid[a], target_.name));
        return;
      }
    }
    if (g.loop < 1)
      report(at, fmt::format("loop (the for-loop range) is {}; it must be >= 1", g.loop));
    // Overflow-safe: each factor is at most max_grid.
    __int128 blocks = static_cast<__int128>(g.grid[0]) * g.grid[1] * g.grid[2];
    if (blocks > target_.max_blocks_total)
      report(at, fmt::format("the grid has {} blocks, more than the {} {} allows in total",
                             static_cast<int64_t>(blocks), target_.max_blocks_total, target_.name));
    if (g.threads < 1) {
      report(at, fmt::format("block={} threads per block; it must be >= 1", g.threads));
    } else if (target_.kind == TargetKind::gpu) {
      // The CPU back end runs each block on one core and ignores the block size.
      if (g.threads > target_.max_threads_per_block)
        report(at, fmt::format("block={} threads per block is more than the {} a block can have "
                               "on {}",
                               g.threads, target_.max_threads_per_block, target_.name));
      else if (g.threads % target_.warp_size != 0)
        report(at, fmt::format("block={} threads per block is not a multiple of the warp size "
                               "({}) on {}",
                               g.threads, target_.warp_size, target_.name));
    }
    int64_t smem = block_smem_bytes(g);
    if (smem > target_.smem_per_block_bytes)
      report(at, fmt::format("this block graph needs {} of shared memory, more than the {} a "
                             "block can use on {}",
                             kib(smem), kib(target_.smem_per_block_bytes), target_.name));
  }

  // Block graphs: every operand is read by an iter. Thread graphs: every operand is used.
  // (Kernel-graph inputs may go unused: a program's signature is its caller's choice, and an
  // optimized graph keeps the signature of its input program even when an input cancels out.)
  void check_inputs_used(const Scope& s, const SourceLoc& at) {
    const Graph& g = *s.g;
    for (ValueId v : g.inputs) {
      if (v < 0 || static_cast<size_t>(v) >= g.values.size()) continue;
      bool used = false;
      for (const Op& op : g.ops)
        for (ValueId in : op.inputs)
          if (in == v && (g.level != Level::block || op.kind == OpKind::iter)) used = true;
      if (g.level == Level::thread)
        used = used || std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end();
      if (used) continue;
      const SourceLoc& loc = pick(g.values[v].loc, at);
      if (g.level == Level::block)
        report(loc, fmt::format("kernel operand '{}' is never read by an iter; read it with "
                                "iter({}, ...) or do not pass it",
                                g.values[v].name, g.values[v].name));
      else
        report(loc,
               fmt::format("thread operand '{}' is never used; do not pass it", g.values[v].name));
    }
  }

  void check_outputs(const Scope& s, const SourceLoc& header) {
    const Graph& g = *s.g;
    SourceLoc end = header;
    if (!end.known() && !g.ops.empty()) end = g.ops.back().loc;
    if (!end.known() && !g.inputs.empty() && g.inputs.back() >= 0 &&
        static_cast<size_t>(g.inputs.back()) < g.values.size())
      end = g.values[g.inputs.back()].loc;
    if (g.level == Level::block) {
      std::vector<ValueId> saves;
      for (const Op& op : g.ops)
        if (op.kind == OpKind::save && !op.outputs.empty()) saves.push_back(op.outputs[0]);
      if (saves.empty())
        report(end, "this kernel produces no results: its block graph needs a save");
      else if (saves != g.outputs)
        report(end, "the block graph's outputs must be its save results, in statement order");
      return;
    }
    if (g.outputs.empty()) {
      report(end, g.level == Level::kernel
                      ? "this program has no outputs; add an 'output NAME' statement"
                      : "this thread produces no results; add an 'output NAME' statement");
      return;
    }
    for (size_t i = 0; i < g.outputs.size(); ++i) {
      ValueId v = g.outputs[i];
      if (v < 0 || static_cast<size_t>(v) >= g.values.size()) {
        report(end, fmt::format("output {} refers to value #{}, which does not exist", i + 1, v));
        continue;
      }
      const SourceLoc& loc = pick(g.values[v].loc, end);
      if (!s.defined[v])
        report(loc, fmt::format("output '{}' is not defined by any statement", g.values[v].name));
      else if (std::find(g.outputs.begin(), g.outputs.begin() + static_cast<long>(i), v) !=
               g.outputs.begin() + static_cast<long>(i))
        report(loc, fmt::format("'{}' is listed as an output twice", g.values[v].name));
    }
  }

  // All rules local to one statement; throws the first violation.
  void check_op(Scope& s, int index) {
    const Graph& g = *s.g;
    const Op& op = g.ops[index];
    const OpInfo& info = op_info(op.kind);
    const SourceLoc& loc = op.loc;

    check_op_level(info, g.level, loc);
    check_op_arity(info, op.inputs.size(), loc);

    // Operands exist and are defined earlier (this also rules out cycles).
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      ValueId v = op.inputs[k];
      if (v < 0 || static_cast<size_t>(v) >= g.values.size())
        throw UserError(loc, fmt::format("operand {} of '{}' refers to value #{}, which does "
                                         "not exist",
                                         k + 1, info.name, v));
      if (s.defined[v]) continue;
      int p = s.producer[v];
      if (p >= index)
        throw UserError(loc, fmt::format("'{}' is used before it is defined{}; statements must "
                                         "come in dependency order, without cycles",
                                         g.values[v].name, line_of(g.ops[p].loc)));
      throw UserError(
          loc, fmt::format("'{}' is not defined by any statement or input", g.values[v].name));
    }
    for (ValueId v : op.outputs)
      if (v < 0 || static_cast<size_t>(v) >= g.values.size())
        throw UserError(loc, fmt::format("this '{}' defines value #{}, which is not in the "
                                         "graph's value table",
                                         info.name, v));

    if (op.kind == OpKind::kernel || op.kind == OpKind::thread)
      check_nested_signature(s, op);
    else
      check_types(s, op);

    if (g.level == Level::block) check_stage(s, index);
  }

  // Re-infers the result types from the operator table and compares with the stored ones.
  void check_types(const Scope& s, const Op& op) {
    const Graph& g = *s.g;
    const OpInfo& info = op_info(op.kind);
    if (op.body)
      throw UserError(op.loc,
                      fmt::format("'{}' cannot have a body; only kernel and thread do", info.name));
    // An operand from a statement that already failed has an untrustworthy type.
    for (ValueId v : op.inputs)
      if (s.poisoned[v]) return;
    std::vector<TensorType> in;
    for (ValueId v : op.inputs) in.push_back(g.type(v));
    std::vector<TensorType> out;
    Attrs attrs = op.attrs;
    try {
      complete_attrs(info, attrs);
      out = info.infer(in, attrs, g.infer_context());
    } catch (const UserError& e) {
      throw UserError(op.loc, fmt::format("{}: {}", info.name, e.message()));
    }
    if (out.size() != op.outputs.size())
      throw UserError(op.loc, fmt::format("'{}' here produces {} result{}, but the statement "
                                          "defines {}",
                                          info.name, out.size(), out.size() == 1 ? "" : "s",
                                          op.outputs.size()));
    for (size_t k = 0; k < out.size(); ++k)
      if (!(g.type(op.outputs[k]) == out[k]))
        throw UserError(op.loc, fmt::format("'{}' is recorded as {}, but {} gives {} here",
                                            g.values[op.outputs[k]].name,
                                            g.type(op.outputs[k]).str(), info.name, out[k].str()));
  }

  // A kernel or thread op: its body's level, operands and results match the statement.
  void check_nested_signature(const Scope& s, const Op& op) {
    const Graph& g = *s.g;
    const OpInfo& info = op_info(op.kind);
    Level want = op.kind == OpKind::kernel ? Level::block : Level::thread;
    if (!op.body) throw UserError(op.loc, fmt::format("this {} has no body", info.name));
    const Graph& body = *op.body;
    if (body.level != want)
      throw UserError(op.loc, fmt::format("the body of a {} must be a {} graph, not a {} graph",
                                          info.name, level_name(want), level_name(body.level)));
    for (size_t i = 0; i < op.inputs.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (op.inputs[i] == op.inputs[j])
          throw UserError(op.loc, fmt::format("'{}' is passed twice to {}; pass it once and "
                                              "read it twice inside",
                                              g.values[op.inputs[i]].name, info.name));
    if (body.inputs.size() != op.inputs.size())
      throw UserError(op.loc, fmt::format("this {} passes {} operand{}, but its body takes {}",
                                          info.name, op.inputs.size(),
                                          op.inputs.size() == 1 ? "" : "s", body.inputs.size()));
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      ValueId b = body.inputs[i];
      if (b < 0 || static_cast<size_t>(b) >= body.values.size())
        throw UserError(op.loc, fmt::format("input {} of this {}'s body refers to value #{}, "
                                            "which does not exist",
                                            i + 1, info.name, b));
      if (!(body.type(b) == g.type(op.inputs[i])))
        throw UserError(op.loc, fmt::format("operand '{}' is {} but the body declares it as {}",
                                            g.values[op.inputs[i]].name, g.type(op.inputs[i]).str(),
                                            body.type(b).str()));
    }
    if (body.outputs.size() != op.outputs.size())
      throw UserError(op.loc, fmt::format("this {} defines {} result{}, but its body produces {}",
                                          info.name, op.outputs.size(),
                                          op.outputs.size() == 1 ? "" : "s", body.outputs.size()));
    for (size_t i = 0; i < op.outputs.size(); ++i) {
      ValueId b = body.outputs[i];
      if (b < 0 || static_cast<size_t>(b) >= body.values.size()) continue;  // body reports it
      const Value& r = g.values[op.outputs[i]];
      if (!(body.type(b) == r.type))
        throw UserError(op.loc, fmt::format("'{}' is recorded as {}, but the body produces {}",
                                            r.name, r.type.str(), body.type(b).str()));
      // The text format names a kernel's results after its saves (docs/format.md).
      if (op.kind == OpKind::kernel && body.values[b].name != r.name)
        throw UserError(op.loc, fmt::format("result {} of this kernel is named '{}' but its save "
                                            "is named '{}'; they must be the same",
                                            i + 1, r.name, body.values[b].name));
    }
  }

  // Stage rules of block graphs, which also enforce the path rule: a path from an iter to a
  // save passes exactly one iter, at most one accumulator (exactly one from a loop-stage iter)
  // and one save.
  void check_stage(Scope& s, int index) {
    const Graph& g = *s.g;
    const Op& op = g.ops[index];
    const char* name = op_info(op.kind).name;
    bool post = op.stage == Stage::post;
    bool accum = is_accumulator(op.kind);

    if (post) s.seen_post = true;
    if (!post && s.seen_post) {
      s.seen_post = false;  // reported once per misplaced run of loop-stage statements
      throw UserError(op.loc, fmt::format("this loop-stage '{}' comes after post-stage "
                                          "statements; the loop stage must come first",
                                          name));
    }
    if (accum && post)
      throw UserError(op.loc, fmt::format("accumulators run inside the loop: move this '{}' "
                                          "before 'after:'",
                                          name));
    if (op.kind == OpKind::save && !post)
      throw UserError(op.loc,
                      "save writes the block's result once, after the loop: move it "
                      "after 'after:'");

    for (ValueId v : op.inputs) {
      if (s.poisoned[v]) continue;
      const std::string& n = g.values[v].name;
      Kind k = s.kind[v];
      if (k == Kind::saved)
        throw UserError(op.loc, fmt::format("'{}' is a save result, written to device memory as "
                                            "the kernel's output; it cannot be read inside the "
                                            "block graph",
                                            n));
      if (op.kind == OpKind::iter) {
        if (k != Kind::operand)
          throw UserError(op.loc, fmt::format("iter reads kernel operands only, and '{}' is "
                                              "computed inside this block graph: every path to "
                                              "a save passes through exactly one iter",
                                              n));
        continue;
      }
      if (k == Kind::operand)
        throw UserError(op.loc, fmt::format("'{}' is a kernel operand in device memory: read it "
                                            "through iter({}, ...)",
                                            n, n));
      if (accum) {
        if (k == Kind::accumulated)
          throw UserError(op.loc, fmt::format("'{}' is already the result of an accumulator{}; "
                                              "every path from an iter to a save passes at most "
                                              "one accumulator",
                                              n, line_of(g.ops[s.producer[v]].loc)));
        if (k == Kind::post)
          throw UserError(op.loc, fmt::format("'{}' is a post-stage value; accumulators "
                                              "consume loop-stage values",
                                              n));
        continue;
      }
      if (op.kind == OpKind::save && k == Kind::loop)
        throw UserError(op.loc, fmt::format("'{}' is a loop-stage value: every path from a "
                                            "loop-stage iter to a save passes through exactly "
                                            "one accumulator (e.g. accum_sum({}))",
                                            n, n));
      if (!post && (k == Kind::accumulated || k == Kind::post))
        throw UserError(op.loc, fmt::format("'{}' is {}, available only after the loop: this "
                                            "statement must come after 'after:'",
                                            n,
                                            k == Kind::accumulated ? "the result of an accumulator"
                                                                   : "a post-stage value"));
      if (post && k == Kind::loop)
        throw UserError(op.loc, fmt::format("'{}' is a loop-stage value, which only exists "
                                            "inside the loop: carry it out with an accumulator "
                                            "(accum_sum, accum_max or accum_concat)",
                                            n));
    }
    if (op.kind == OpKind::iter && post) {
      int64_t fmap = op.attrs.get_int_or("fmap", -1);
      if (fmap != -1)
        throw UserError(op.loc, fmt::format("this iter runs after the loop, where there is no "
                                            "iteration to chunk by: its fmap must be '-' (got "
                                            "{})",
                                            fmap));
    }
    Kind out = op.kind == OpKind::save ? Kind::saved
               : accum                 ? Kind::accumulated
               : post                  ? Kind::post
                                       : Kind::loop;
    for (ValueId v : op.outputs) s.kind[v] = out;
  }

  const Target& target_;
  std::vector<UserError> errors_;
};

}  // namespace

std::vector<UserError> check_graph(const Graph& g, const Target& target) {
  Checker c(target);
  c.check_kernel_graph(g);
  return c.take();
}

void validate(const Graph& g, const Target& target) {
  auto errors = check_graph(g, target);
  if (!errors.empty()) throw errors.front();
}

// Every tile the block keeps in shared memory, each in its own buffer (no reuse, single-buffered
// loads): iterator tiles, loop-stage results, accumulators (counted at f32 width or wider, since
// code generation accumulates in f32) and post-stage results. Kernel operands and save results
// live in device memory, thread-graph intermediates in registers. Memory planning later reuses
// buffers and keeps matmul fragments in registers, so the figure it plans is lower.
int64_t block_smem_bytes(const Graph& block) {
  int64_t total = 0;
  for (const Op& op : block.ops) {
    if (op.kind == OpKind::save) continue;
    for (ValueId v : op.outputs) {
      if (v < 0 || static_cast<size_t>(v) >= block.values.size()) continue;
      const TensorType& t = block.values[v].type;
      int64_t width = dtype_bytes(t.dtype);
      if (is_accumulator(op.kind)) width = std::max<int64_t>(width, 4);
      total += numel(t.shape) * width;
    }
  }
  return total;
}

}  // namespace weft
