// Depth-first enumeration of operator graphs over an input pool, deduplicated by a structural
// hash of the op set, with each new value's finite-field fingerprint computed once (one-op
// programs over the operands' residues, at both instantiations).
#include "rewrite/enumerate.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <unordered_set>

#include "core/error.h"
#include "interp/interpreter.h"
#include "verify/field.h"
#include "verify/field_domain.h"
#include "verify/fingerprint_cache.h"

namespace weft {
namespace {

using FieldTensor = Tensor<FieldPQ>;

// Sizes the shape rules are probed at to read off a result's dims as linear forms: odd (a split
// of a bare variable fails, as it would at some instantiation) and far apart.
constexpr std::array<int64_t, kMaxRuleVariables> kProbeBase = {7, 11, 13, 17};

uint64_t attrs_hash(const Attrs& attrs) {
  uint64_t h = 0x5bd1e995;
  for (const auto& [name, value] : attrs.entries()) {
    h = ff::mix64(h, std::hash<std::string>{}(name));
    if (const auto* i = std::get_if<int64_t>(&value)) h = ff::mix64(h, static_cast<uint64_t>(*i));
    if (const auto* r = std::get_if<Rational>(&value))
      h = ff::mix64(h, std::hash<std::string>{}(r->str()));
    if (const auto* l = std::get_if<std::vector<int64_t>>(&value))
      for (int64_t x : *l) h = ff::mix64(h, static_cast<uint64_t>(x));
  }
  return h;
}

int64_t form_size(const DimForm& f, const std::vector<int64_t>& sizes) {
  int64_t s = f[0];
  for (size_t v = 0; v < sizes.size(); ++v) s += f[v + 1] * sizes[v];
  return s;
}

Shape shape_at(const std::vector<DimForm>& forms, const std::vector<int64_t>& sizes) {
  Shape s;
  for (const DimForm& f : forms) s.push_back(form_size(f, sizes));
  return s;
}

// One operator of the vocabulary with its attributes (dims are filled in per operand rank).
struct Variant {
  OpKind kind;
  Attrs attrs;
  int arity;
};

// The variants of every rewrite row for a first operand of rank `rank`: each value of a `dim`
// attribute, 2 for other required integers (parts, times), 2 and 4 for rationals (factor: so
// scale(scale(x, 2), 2) = scale(x, 4) is a rule, and a match may read 2 and 4 as powers of
// another constant, rewrite/model_match.h); optional
// attributes keep their defaults.
std::vector<Variant> variants_for_rank(int rank) {
  std::vector<Variant> out;
  for (const OpInfo& info : all_ops()) {
    if (!info.rewrite) continue;
    std::vector<Attrs> sets = {Attrs{}};
    for (const AttrSpec& spec : info.attrs) {
      if (!spec.required) continue;
      std::vector<AttrValue> values;
      if (spec.kind == AttrKind::integer && std::string(spec.name) == "dim")
        for (int d = 0; d < rank; ++d) values.push_back(int64_t{d});
      else if (spec.kind == AttrKind::integer)
        values.push_back(int64_t{2});
      else if (spec.kind == AttrKind::rational)
        values = {Rational(2), Rational(4)};
      else
        WEFT_CHECK(false, "rewrite row {} has attribute {} the generator cannot enumerate",
                   info.name, spec.name);
      std::vector<Attrs> next;
      for (const Attrs& a : sets)
        for (const AttrValue& v : values) {
          Attrs b = a;
          b.set(spec.name, v);
          next.push_back(b);
        }
      sets = std::move(next);
    }
    for (Attrs& a : sets) {
      complete_attrs(info, a);
      out.push_back(Variant{info.kind, std::move(a), info.min_inputs});
    }
  }
  return out;
}

// What a recorded graph holds (its vectors and the ops' attribute maps, roughly).
int64_t graph_bytes(const GenGraph& g) {
  int64_t b = sizeof(GenGraph) + 8 * static_cast<int64_t>(g.value_fingerprint.size()) +
              4 * static_cast<int64_t>(g.sinks.size());
  for (const GenOp& op : g.ops)
    b += sizeof(GenOp) + 64 * static_cast<int64_t>(op.attrs.entries().size()) +
         4 * static_cast<int64_t>(op.operands.size() + op.results.size());
  return b;
}

class Enumerator {
 public:
  Enumerator(const InputPool& pool, const EnumerateOptions& options, const Budget& budget)
      : pool_(pool), options_(options), budget_(budget) {
    WEFT_CHECK(pool.variables.size() <= kMaxRuleVariables, "{} pool variables, at most {}",
               pool.variables.size(), kMaxRuleVariables);
    for (int i = 0; i < 2; ++i)
      domains_.emplace_back(FieldTestParams::draw(ff::mix64(options.seed, 0x7e57 + i), 1));
    for (int r = 1; r <= 4; ++r) variants_.push_back(variants_for_rank(r));
  }

  EnumerateResult run() {
    for (size_t i = 0; i < pool_.inputs.size(); ++i) {
      std::vector<DimForm> forms;
      for (int v : pool_.inputs[i].dims) {
        DimForm f{};
        f[v + 1] = 1;
        forms.push_back(f);
      }
      std::array<FieldTensor, 2> t;
      for (int k = 0; k < 2; ++k)
        t[k] = field_random_input<FieldPQ>(shape_at(forms, options_.sizes[k]),
                                           ff::mix64(options_.seed, 0x1a9 + k), i, 1);
      push_value(forms, std::move(t), gen_input_cone(static_cast<int>(i)));
    }
    for (int i = 0; i < static_cast<int>(pool_.inputs.size()); ++i) {
      record_identity({i});
      for (int j = i + 1; j < static_cast<int>(pool_.inputs.size()); ++j) record_identity({i, j});
    }
    started_ = std::chrono::steady_clock::now();
    last_progress_ = started_;
    dfs(options_.depth);
    return std::move(result_);
  }

 private:
  void push_value(std::vector<DimForm> forms, std::array<FieldTensor, 2> t, uint64_t cone) {
    uint64_t fp = 0x27d4eb2f165667c5ULL;
    for (int k = 0; k < 2; ++k) {
      for (int64_t d : t[k].shape) fp = ff::mix64(fp, static_cast<uint64_t>(d));
      for (const FieldPQ& x : t[k].data) fp = ff::mix64(fp, x.p);
    }
    shapes_.push_back(std::move(forms));
    tensors_.push_back(std::move(t));
    cones_.push_back(cone);
    fingerprints_.push_back(fp);
    consumers_.push_back(0);
  }
  void pop_value() {
    shapes_.pop_back();
    tensors_.pop_back();
    cones_.pop_back();
    fingerprints_.pop_back();
    consumers_.pop_back();
  }

  void record_identity(std::vector<int> sinks) {
    GenGraph g;
    g.sinks = std::move(sinks);
    snapshot(g);
    result_.graphs.push_back(std::move(g));
  }
  void snapshot(GenGraph& g) const { g.value_fingerprint = fingerprints_; }

  // The result dims of `kind` on `operands` as linear forms, or false when the shape rule
  // rejects them at some probe or the dims are not integer forms (a split of an odd form).
  bool infer_forms(const Variant& var, const std::vector<int>& operands,
                   std::vector<std::vector<DimForm>>& forms) const {
    const OpInfo& info = op_info(var.kind);
    const size_t nv = pool_.variables.size();
    std::vector<std::vector<Shape>> probes;  // [probe][result]
    for (size_t p = 0; p <= nv; ++p) {
      std::vector<int64_t> sizes(kProbeBase.begin(), kProbeBase.begin() + nv);
      if (p > 0) sizes[p - 1] += 2;
      std::vector<TensorType> in;
      for (int o : operands) in.push_back(TensorType{DType::f32, shape_at(shapes_[o], sizes)});
      Attrs attrs = var.attrs;
      std::vector<TensorType> out;
      try {
        out = info.infer(in, attrs, InferContext{});
      } catch (const UserError&) {
        return false;
      }
      std::vector<Shape> shapes;
      for (const TensorType& t : out) shapes.push_back(t.shape);
      probes.push_back(std::move(shapes));
    }
    forms.assign(probes[0].size(), {});
    for (size_t r = 0; r < probes[0].size(); ++r) {
      for (size_t d = 0; d < probes[0][r].size(); ++d) {
        DimForm f{};
        int64_t rest = probes[0][r][d];
        for (size_t v = 0; v < nv; ++v) {
          const int64_t diff = probes[v + 1][r][d] - probes[0][r][d];
          if (diff % 2 != 0 || diff < 0) return false;
          f[v + 1] = diff / 2;
          rest -= f[v + 1] * kProbeBase[v];
        }
        if (rest < 0) return false;
        f[0] = rest;
        forms[r].push_back(f);
      }
    }
    return true;
  }

  bool out_of_budget() {
    if (stopped_) return true;
    const int64_t n = static_cast<int64_t>(result_.graphs.size());
    if (budget_.states_exceeded(n)) {
      result_.stop = StopReason::state_budget;
      stopped_ = true;
    } else if (budget_.memory_exceeded(bytes_)) {
      result_.stop = StopReason::memory_budget;
      stopped_ = true;
    } else if ((n & 255) == 0) {
      const auto now = std::chrono::steady_clock::now();
      if (budget_.timed() && budget_.left_s() <= 0) {
        result_.stop = StopReason::time_budget;
        stopped_ = true;
      } else if (options_.progress && now - last_progress_ > std::chrono::seconds(2)) {
        last_progress_ = now;
        options_.progress(fmt::format("rules: enumerating, {} graphs ({:.1f} s)", n,
                                      std::chrono::duration<double>(now - started_).count()));
      }
    }
    return stopped_;
  }

  void try_op(const Variant& var, const std::vector<int>& operands, int depth_left) {
    std::vector<uint64_t> in_cones;
    for (int o : operands) in_cones.push_back(cones_[o]);
    const uint64_t op_hash = gen_op_hash(var.kind, var.attrs, std::move(in_cones));
    if (std::find(op_hashes_.begin(), op_hashes_.end(), op_hash) != op_hashes_.end()) return;
    const uint64_t graph_hash = graph_hash_ + ff::mix64(op_hash);
    if (visited_.count(graph_hash)) return;
    std::vector<std::vector<DimForm>> forms;
    if (!infer_forms(var, operands, forms)) return;
    visited_.insert(graph_hash);
    std::array<std::vector<FieldTensor>, 2> results;
    try {
      for (int k = 0; k < 2; ++k) results[k] = evaluate_op(var, operands, k);
    } catch (const OutsideLaxError&) {
      ++result_.outside_lax;
      return;
    }
    GenOp op{var.kind, var.attrs, operands, {}};
    for (size_t r = 0; r < forms.size(); ++r) {
      op.results.push_back(static_cast<int>(shapes_.size()));
      push_value(forms[r], {std::move(results[0][r]), std::move(results[1][r])},
                 gen_result_cone(op_hash, r));
    }
    for (int o : operands) ++consumers_[o];
    ops_.push_back(op);
    op_hashes_.push_back(op_hash);
    const uint64_t saved_hash = graph_hash_;
    graph_hash_ = graph_hash;

    GenGraph g;
    g.ops = ops_;
    for (size_t v = pool_.inputs.size(); v < shapes_.size(); ++v)
      if (consumers_[v] == 0) g.sinks.push_back(static_cast<int>(v));
    snapshot(g);
    bytes_ += graph_bytes(g);
    result_.graphs.push_back(std::move(g));
    if (depth_left > 1 && !out_of_budget()) dfs(depth_left - 1);

    graph_hash_ = saved_hash;
    op_hashes_.pop_back();
    ops_.pop_back();
    for (int o : operands) --consumers_[o];
    for (size_t r = 0; r < forms.size(); ++r) pop_value();
  }

  std::vector<FieldTensor> evaluate_op(const Variant& var, const std::vector<int>& operands,
                                       int k) const {
    GraphBuilder b(Level::kernel, "op");
    std::vector<ValueId> ids;
    std::vector<FieldTensor> in;
    for (size_t i = 0; i < operands.size(); ++i) {
      in.push_back(tensors_[operands[i]][k]);
      ids.push_back(b.add_input(fmt::format("x{}", i), TensorType{DType::f32, in.back().shape}));
    }
    for (ValueId r : b.add_op(var.kind, ids, var.attrs)) b.add_output(r);
    return evaluate(std::move(b).finish(), in, domains_[k]);
  }

  void dfs(int depth_left) {
    const int values = static_cast<int>(shapes_.size());
    for (int a = 0; a < values && !out_of_budget(); ++a) {
      const int rank = static_cast<int>(shapes_[a].size());
      for (const Variant& var : variants_[rank - 1]) {
        if (var.arity == 1) {
          try_op(var, {a}, depth_left);
          continue;
        }
        const OpInfo& info = op_info(var.kind);
        for (int b = info.commutative ? a : 0; b < values; ++b) {
          if (a == b && info.same_operands_redundant) continue;
          try_op(var, {a, b}, depth_left);
        }
      }
    }
  }

  const InputPool& pool_;
  const EnumerateOptions& options_;
  const Budget& budget_;
  std::vector<FieldDomain<FieldPQ>> domains_;
  std::vector<std::vector<Variant>> variants_;  // per operand rank - 1

  // The graph being extended: values (pool inputs, then results) and ops.
  std::vector<std::vector<DimForm>> shapes_;
  std::vector<std::array<FieldTensor, 2>> tensors_;
  std::vector<uint64_t> cones_, fingerprints_;
  std::vector<int> consumers_;
  std::vector<GenOp> ops_;
  std::vector<uint64_t> op_hashes_;
  uint64_t graph_hash_ = 0;  // sum of mixed op hashes: independent of the op order

  std::unordered_set<uint64_t> visited_;
  EnumerateResult result_;
  bool stopped_ = false;
  int64_t bytes_ = 0;  // what the recorded graphs hold, for the memory budget
  std::chrono::steady_clock::time_point started_, last_progress_;
};

}  // namespace

uint64_t gen_op_hash(OpKind kind, const Attrs& attrs, std::vector<uint64_t> operand_cones) {
  if (op_info(kind).commutative) std::sort(operand_cones.begin(), operand_cones.end());
  uint64_t h = ff::mix64(static_cast<uint64_t>(kind) + 1, attrs_hash(attrs));
  for (uint64_t c : operand_cones) h = ff::mix64(h, c);
  return h;
}

uint64_t gen_input_cone(int input_id) {
  return ff::mix64(0x1b873593, static_cast<uint64_t>(input_id));
}

uint64_t gen_result_cone(uint64_t op_hash, size_t result) {
  return ff::mix64(op_hash, result);
}

std::vector<uint64_t> gen_cones(const GenGraph& g, size_t pool_inputs,
                                const std::vector<int>& input_ids,
                                std::vector<uint64_t>* op_hashes) {
  std::vector<uint64_t> cones(g.num_values(), 0);
  for (size_t i = 0; i < pool_inputs; ++i) cones[i] = gen_input_cone(input_ids[i]);
  if (op_hashes) op_hashes->clear();
  for (const GenOp& op : g.ops) {
    std::vector<uint64_t> in;
    for (int o : op.operands) in.push_back(cones[o]);
    const uint64_t h = gen_op_hash(op.kind, op.attrs, std::move(in));
    for (size_t r = 0; r < op.results.size(); ++r) cones[op.results[r]] = gen_result_cone(h, r);
    if (op_hashes) op_hashes->push_back(h);
  }
  return cones;
}

InputPool default_input_pool() {
  return InputPool{{"n", "m", "k"},
                   {{"a", {0, 1}}, {"b", {0, 1}}, {"w", {1, 2}}, {"v", {1, 2}}, {"u", {2, 0}}}};
}

EnumerateResult enumerate_graphs(const InputPool& pool, const EnumerateOptions& options,
                                 const Budget& budget) {
  return Enumerator(pool, options, budget).run();
}

namespace {

Shape pool_shape(const PoolInput& in, const std::vector<int64_t>& sizes) {
  Shape s;
  for (int v : in.dims) s.push_back(sizes.at(v));
  return s;
}

}  // namespace

Graph build_program(const InputPool& pool, const GenGraph& g, const std::vector<int64_t>& sizes,
                    const std::vector<int>& outputs, const std::vector<std::string>& names,
                    const std::vector<int>& op_order) {
  GraphBuilder b(Level::kernel, "side");
  std::vector<ValueId> ids(g.num_values(), -1);
  for (size_t i = 0; i < pool.inputs.size(); ++i)
    ids[i] =
        b.add_input(pool.inputs[i].name, TensorType{DType::f32, pool_shape(pool.inputs[i], sizes)});
  std::vector<int> order = op_order;
  if (order.empty())
    for (size_t i = 0; i < g.ops.size(); ++i) order.push_back(static_cast<int>(i));
  int fresh = 0;
  for (int i : order) {
    const GenOp& op = g.ops[i];
    std::vector<ValueId> in;
    for (int o : op.operands) in.push_back(ids[o]);
    std::vector<std::string> result_names;
    for (int r : op.results)
      result_names.push_back(names.empty() ? fmt::format("t{}", fresh++) : names[r]);
    const std::vector<ValueId> out = b.add_op(op.kind, in, op.attrs, result_names);
    for (size_t r = 0; r < out.size(); ++r) ids[op.results[r]] = out[r];
  }
  for (int o : outputs) b.add_output(ids[o]);
  return std::move(b).finish();
}

}  // namespace weft
