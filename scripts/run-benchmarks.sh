#!/usr/bin/env bash
# `make bench`: the micro-benchmarks and the search figures recorded in docs/benchmarks.md.
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
out=out/bench
mkdir -p "$out"
echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
for b in verify_bench absexpr_bench sym_bench; do
  [ -x "$build/$b" ] && "$build/$b" --benchmark_min_time=0.5 | tee "$out/$b.txt"
done
for ex in rms_norm_linear gated_mlp gqa_attention; do
  echo "== weft optimize examples/$ex.weft --time-budget ${WEFT_BENCH_BUDGET:-120}"
  "$build/weft" optimize "examples/$ex.weft" -o "$out/$ex" --time-budget "${WEFT_BENCH_BUDGET:-120}" --quiet
  cat "$out/$ex/timing.json"
done
echo "== search throughput: one thread against two (scripts/search-throughput.sh)"
scripts/search-throughput.sh "$build"
echo "== pruning on vs off (tests/data/silu_linear_tiny.weft, max_block_ops 4)"
printf '{"max_kernel_ops": 1, "max_block_ops": 4, "max_grid_dims": 1, "min_blocks": 2, "max_loop": 8, "time_budget_s": 0}' > "$out/tiny.json"
for p in "" "--no-pruning"; do
  "$build/weft" optimize tests/data/silu_linear_tiny.weft --config "$out/tiny.json" $p -o "$out/tiny$p" --quiet
  cat "$out/tiny$p/timing.json"
done
echo "== pruning on vs off per example (bench/pruning_small.json)"
scripts/pruning-comparison.sh "$build" "${WEFT_PRUNING_BUDGET:-120}"
for ex in rms_norm_linear gated_mlp; do
  "$build/weft" bench "examples/$ex.fused.weft" --backend cpu --compare "examples/$ex.weft"
done
echo "== the benchmark suite (bench/programs, ${WEFT_SUITE_BUDGET:-60} s each; table in docs/benchmarks.md)"
scripts/bench-programs.sh "$build"
