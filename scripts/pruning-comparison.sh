#!/usr/bin/env bash
# What pruning buys: each example searched on the smaller configuration bench/pruning_small.json,
# with pruning (abstract expressions + axis classes) and without, one markdown row per run.
# Usage: scripts/pruning-comparison.sh [BUILD_DIR] [BUDGET_SECONDS]
set -euo pipefail
build=${1:-build}
budget=${2:-120}
cd "$(dirname "$0")/.."
out=out/pruning
mkdir -p "$out"
echo "| program | pruning | stop | states | states/s per core | candidates | verified | wall (search + verify) | best predicted speedup |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for ex in rms_norm_linear gated_mlp gqa_attention; do
  for flag in "" "--no-pruning"; do
    dir="$out/$ex${flag}"
    "$build/weft" optimize "examples/$ex.weft" --config bench/pruning_small.json $flag \
      --time-budget "$budget" -o "$dir" --quiet >/dev/null
    python3 - "$dir" "$ex" "${flag:-on}" <<'PY'
import json, sys
d, ex, flag = sys.argv[1:]
s = json.load(open(f"{d}/summary.json"))
t = json.load(open(f"{d}/timing.json"))
threads = 2  # both cores of the dev machine (the optimizer uses all hardware threads)
rate = s["states"] / max(t["search_s"], 1e-9) / threads
pr = "off" if flag != "on" else "on"
speed = f'{s["predicted_speedup"]:.2f}×' if s.get("verified") else "none found"
print(f'| {ex} | {pr} | {s["stop_reason"]} | {s["states"]:,} | {rate/1e3:,.0f} k | {s["candidates"]:,} | '
      f'{s["verified"]} | {t["search_s"]:.1f} + {t.get("verify_s", 0):.1f} s | {speed} |')
PY
  done
done
