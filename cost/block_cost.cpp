// Graph-defined kernels priced from their block graph: per-block loads (with L2 reuse of
// replicated tiles), shared-memory traffic, tensor-core and CUDA-core work, occupancy, waves and
// the load/compute overlap of the for-loop. docs/cost-model.md derives each step.
#include "cost/block_cost.h"

#include <algorithm>

#include "cost/library_cost.h"
#include "cost/op_work.h"
#include "ir/validate.h"

namespace weft {

namespace {

int64_t ceil_div(int64_t x, int64_t m) {
  return (x + m - 1) / m;
}
int64_t round_up(int64_t x, int64_t m) {
  return ceil_div(x, m) * m;
}

// Per-block work of one phase (prologue: loop-invariant loads; loop: all F iterations; post).
struct Phase {
  double requested = 0;  // bytes asked of L2 / device memory
  double dram = 0;       // the part that misses L2
  double smem = 0;       // shared-memory traffic of the operators (not the loads' landing)
  double tensor = 0;     // tensor-core flops
  double cuda = 0;       // CUDA-core flops
};

bool is_loop_load(const Op& op) {
  return op.kind == OpKind::iter && op.stage == Stage::loop && op.attrs.get_int_or("fmap", -1) >= 0;
}

// Shared-memory bytes a block matmul reads and writes. The block's warps split the M x N result;
// each warp reads the A rows and B columns of its part, so A is read once per warp column and B
// once per warp row. The result stays in registers when only accumulators consume it.
double matmul_smem_bytes(const Graph& b, const Op& op, const MatmulDims& d, bool result_in_regs) {
  int64_t warps = std::max<int64_t>(1, b.threads / 32);
  int64_t warp_rows = std::min(warps, std::max<int64_t>(1, ceil_div(d.m, 16)));
  int64_t warp_cols =
      std::min(std::max<int64_t>(1, warps / warp_rows), std::max<int64_t>(1, ceil_div(d.n, 8)));
  double a = tensor_bytes(b.type(op.inputs[0]));
  double bb = tensor_bytes(b.type(op.inputs[1]));
  double out = result_in_regs ? 0 : tensor_bytes(b.type(op.outputs[0]));
  return a * static_cast<double>(warp_cols) + bb * static_cast<double>(warp_rows) + out;
}

}  // namespace

int64_t block_smem_estimate(const Graph& b) {
  int64_t extra_stages = 0;
  if (b.loop > 1)
    for (const Op& op : b.ops)
      if (is_loop_load(op))
        extra_stages += (kPipelineStages - 1) * numel(b.type(op.outputs[0]).shape) *
                        dtype_bytes(b.type(op.outputs[0]).dtype);
  return block_smem_bytes(b) + extra_stages;
}

KernelCost block_kernel_cost(const Graph& g, const Op& op, const Target& t) {
  WEFT_CHECK(op.kind == OpKind::kernel && op.body, "not a graph-defined kernel");
  const Graph& b = *op.body;
  KernelCost c;
  c.name = op.outputs.empty() ? std::string() : g.value(op.outputs[0]).name;
  c.op = "kernel";
  c.graph_defined = true;
  const int64_t F = std::max<int64_t>(1, b.loop);
  const int64_t nb = std::max<int64_t>(1, b.num_blocks());
  c.blocks = nb;
  c.loop = F;

  // Input iterators: what each block requests, per kernel input, and what L2 absorbs. The first
  // block to touch a byte brings it from device memory; every other block reading the same byte
  // (a replicated input, imap '-') hits L2 if all replicated inputs fit in its usable part.
  std::vector<double> requested_by_input(b.inputs.size(), 0.0);  // all blocks
  std::vector<int> input_index(b.values.size(), -1);
  for (size_t i = 0; i < b.inputs.size(); ++i) input_index[b.inputs[i]] = static_cast<int>(i);
  for (const Op& o : b.ops) {
    if (o.kind != OpKind::iter) continue;
    WEFT_CHECK(input_index[o.inputs[0]] >= 0, "iter reads '{}', not a kernel operand",
               b.value(o.inputs[0]).name);
    double loads = is_loop_load(o) ? static_cast<double>(F) : 1.0;
    requested_by_input[input_index[o.inputs[0]]] +=
        static_cast<double>(nb) * loads * tensor_bytes(b.type(o.outputs[0]));
  }
  double replicated_footprint = 0;
  for (size_t i = 0; i < b.inputs.size(); ++i) {
    double unique = tensor_bytes(b.type(b.inputs[i]));
    if (requested_by_input[i] > unique) replicated_footprint += unique;
  }
  double usable_l2 = static_cast<double>(t.l2_bytes) * kL2UsableFraction;
  double hit_rate = replicated_footprint <= usable_l2 ? 1.0 : usable_l2 / replicated_footprint;
  std::vector<double> dram_ratio(b.inputs.size(), 1.0);  // of an input's requests that miss L2
  for (size_t i = 0; i < b.inputs.size(); ++i) {
    double req = requested_by_input[i];
    double hits = std::max(0.0, req - tensor_bytes(b.type(b.inputs[i]))) * hit_rate;
    if (req > 0) dram_ratio[i] = (req - hits) / req;
  }

  // Per-block work by phase.
  Phase pro, loop, post;
  double store = 0, landing = 0;
  const auto consumers = b.consumers();
  const auto producers = b.producers();
  for (const Op& o : b.ops) {
    const bool in_loop = o.stage == Stage::loop;
    const double reps = in_loop ? static_cast<double>(F) : 1.0;
    Phase& ph = in_loop ? loop : post;
    switch (o.kind) {
      case OpKind::iter: {
        Phase& lp = is_loop_load(o) ? loop : (in_loop ? pro : post);
        double loads = is_loop_load(o) ? static_cast<double>(F) : 1.0;
        double bytes = loads * tensor_bytes(b.type(o.outputs[0]));
        lp.requested += bytes;
        lp.dram += bytes * dram_ratio[input_index[o.inputs[0]]];
        landing += bytes;
        break;
      }
      case OpKind::save: {
        double bytes = tensor_bytes(b.type(o.inputs[0]));
        post.smem += bytes;
        store += bytes;
        break;
      }
      case OpKind::matmul: {
        const TensorType& a = b.type(o.inputs[0]);
        MatmulDims d = matmul_dims(a, b.type(o.inputs[1]));
        bool in_regs = !consumers[o.outputs[0]].empty();
        for (int u : consumers[o.outputs[0]])
          if (!is_accumulator(b.ops[u].kind)) in_regs = false;
        ph.smem += reps * matmul_smem_bytes(b, o, d, in_regs);
        if (on_tensor_cores(a.dtype, t))  // whole m16n8k16 MMA tiles
          ph.tensor +=
              reps * 2.0 * d.batch * round_up(d.m, 16) * round_up(d.n, 8) * round_up(d.k, 16);
        else
          ph.cuda += reps * d.flops();
        break;
      }
      case OpKind::accum_sum:
      case OpKind::accum_max:
      case OpKind::accum_concat: {
        double bytes = tensor_bytes(b.type(o.inputs[0]));
        int src = producers[o.inputs[0]];
        bool from_mma = src >= 0 && b.ops[src].kind == OpKind::matmul;
        if (o.kind == OpKind::accum_concat) {  // copy the tile into its slot
          loop.smem += static_cast<double>(F) * 2.0 * bytes;
        } else if (!from_mma) {  // read the tile, read-modify-write the accumulator
          loop.smem += static_cast<double>(F) * 3.0 * bytes;
          loop.cuda += static_cast<double>(F) * cuda_flops_of(b, o);
        }
        post.smem += tensor_bytes(b.type(o.outputs[0]));  // the result lands in shared memory
        break;
      }
      case OpKind::thread: {
        for (ValueId v : o.inputs) ph.smem += reps * tensor_bytes(b.type(v));
        for (ValueId v : o.outputs) ph.smem += reps * tensor_bytes(b.type(v));
        for (const Op& inner : o.body->ops) ph.cuda += reps * cuda_flops_of(*o.body, inner);
        break;
      }
      case OpKind::reshape:
      case OpKind::split:
      case OpKind::concat:
        break;  // offsets into shared memory, no copy
      case OpKind::repeat:
        ph.smem += reps * 2.0 * tensor_bytes(b.type(o.outputs[0]));
        break;
        WEFT_CASES_UNARY
        WEFT_CASES_BINARY
        WEFT_CASES_REDUCTION {  // shared memory in, shared memory out
          for (ValueId v : o.inputs) ph.smem += reps * tensor_bytes(b.type(v));
          for (ValueId v : o.outputs) ph.smem += reps * tensor_bytes(b.type(v));
          ph.cuda += reps * cuda_flops_of(b, o);
          break;
        }
        WEFT_CASES_COMPOSITE
        WEFT_CASES_MODEL
      case OpKind::kernel:
        WEFT_CHECK(false, "'{}' in a block graph", op_info(o.kind).name);
    }
  }

  // Occupancy and waves.
  const int64_t sms = std::max(1, t.sm_count);
  c.smem_per_block = block_smem_estimate(b);
  int64_t by_smem = t.smem_per_sm_bytes / std::max<int64_t>(1, c.smem_per_block);
  int64_t by_threads = t.max_threads_per_sm / std::max<int64_t>(1, b.threads);
  c.blocks_per_sm = std::max<int64_t>(
      1, std::min({by_smem, by_threads, static_cast<int64_t>(t.max_blocks_per_sm)}));
  const int64_t slots = sms * c.blocks_per_sm;
  c.waves = ceil_div(nb, slots);

  const double lat = t.dram_latency_s;
  const double tc_per_sm =
      std::max(t.tensor_flops_f16 * t.block_mma_fraction, 1.0) / static_cast<double>(sms);
  const double cuda_per_sm = t.cuda_flops_f32 / static_cast<double>(sms);
  double mem_total = 0, comp_total = 0, time_total = 0;
  // One wave of n blocks, spread over min(n, SMs) SMs: k blocks on the busiest SM.
  auto wave = [&](int64_t n) {
    const double k = static_cast<double>(ceil_div(n, std::min(n, sms)));
    const double dn = static_cast<double>(n);
    auto mem = [&](const Phase& p) {
      return std::max({dn * p.dram / t.dram_bytes_per_s, dn * p.requested / t.l2_bytes_per_s,
                       k * p.requested / t.sm_load_bytes_per_s});
    };
    auto comp = [&](const Phase& p) {
      return k * std::max(p.tensor / tc_per_sm + p.cuda / cuda_per_sm,
                          p.smem / t.smem_bytes_per_s_per_sm);
    };
    double time = 0, m = 0, cp = 0;
    if (pro.requested > 0) {
      double pm = lat + mem(pro);
      time += pm;
      m += pm;
    }
    double lm = mem(loop), lc = comp(loop);
    if (loop.requested <= 0) {
      time += lc;
    } else if (F > 1) {
      // Double-buffered: iteration i+1 loads while i computes; each iteration waits at least one
      // load latency (one stage in flight per block).
      double mi = lm / static_cast<double>(F), ci = lc / static_cast<double>(F);
      time += lat + mi + static_cast<double>(F - 1) * std::max({mi, ci, lat}) + ci;
      lm += lat;
    } else if (k <= 1) {
      time += lat + lm + lc;  // loop == 1, one block per SM: load, then compute
      lm += lat;
    } else {
      // loop == 1 but k blocks share the SM: one block's compute hides another's load.
      time += lat + std::max(lm, lc) + std::min(lm, lc) / k;
      lm += lat;
    }
    m += lm;
    cp += lc;
    if (post.requested > 0) {
      double pm = lat + mem(post);
      time += pm;
      m += pm;
    }
    double pc = comp(post);
    double st = std::max(dn * store / t.dram_bytes_per_s, k * store / t.sm_load_bytes_per_s);
    time += pc + st;
    cp += pc;
    m += st;
    time_total += time;
    mem_total += m;
    comp_total += cp;
  };
  if (c.waves > 1) {
    for (int64_t w = 0; w + 1 < c.waves; ++w) wave(slots);
  }
  wave(nb - (c.waves - 1) * slots);

  const double dnb = static_cast<double>(nb);
  c.requested_bytes = dnb * (pro.requested + loop.requested + post.requested);
  double load_dram = dnb * (pro.dram + loop.dram + post.dram);
  c.l2_hit_bytes = c.requested_bytes - load_dram;
  c.store_bytes = dnb * store;
  c.dram_bytes = load_dram + c.store_bytes;
  c.smem_bytes = dnb * (pro.smem + loop.smem + post.smem + landing);
  c.tensor_flops = dnb * (pro.tensor + loop.tensor + post.tensor);
  c.cuda_flops = dnb * (pro.cuda + loop.cuda + post.cuda);
  c.launch_s = t.launch_overhead_s;
  c.memory_s = mem_total;
  c.compute_s = comp_total;
  c.time_s = c.launch_s + time_total;
  classify_bound(c);
  return c;
}

}  // namespace weft
