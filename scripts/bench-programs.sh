#!/usr/bin/env bash
# The benchmark suite (bench/programs/*.weft): `weft optimize` on each with a time budget, then
# scripts/bench_table.py writes the table between the markers in docs/benchmarks.md.
set -uo pipefail
build=${1:-build}
budget=${WEFT_SUITE_BUDGET:-60}
cd "$(dirname "$0")/.."
out=out/bench/programs
rm -rf "$out"
mkdir -p "$out"
for f in bench/programs/*.weft; do
  name=$(basename "$f" .weft)
  echo "== weft optimize $f --time-budget $budget"
  start=$(date +%s.%N)
  "$build/weft" optimize "$f" -o "$out/$name" --time-budget "$budget" --quiet \
    >"$out/$name.log" 2>&1
  rc=$?
  end=$(date +%s.%N)
  mkdir -p "$out/$name"
  printf '{"exit_code": %d, "wall_clock_s": %.1f}\n' "$rc" "$(echo "$end - $start" | bc)" \
    >"$out/$name/run.json"
  tail -n 3 "$out/$name.log"
done
python3 scripts/bench_table.py "$out" docs/benchmarks.md "$budget"
