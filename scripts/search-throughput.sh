#!/usr/bin/env bash
# The search's throughput (issue 33, item 4): the same states searched on one thread and on two
# (a state budget, no time budget, no convergence, baselines off, so both runs explore the same
# space), and a Markdown table of states per second, candidates per million states, memory per
# state and the two-thread speed-up. Usage:
#   scripts/search-throughput.sh [BUILD] [PROGRAM.weft ...]   (WEFT_THROUGHPUT_STATES: 6000000)
set -uo pipefail
build=${1:-build}
shift || true
states=${WEFT_THROUGHPUT_STATES:-6000000}
cd "$(dirname "$0")/.."
programs=("$@")
if [ ${#programs[@]} -eq 0 ]; then
  programs=(examples/rms_norm_linear.weft examples/gqa_attention.weft)
fi
out=out/throughput
mkdir -p "$out"
for f in "${programs[@]}"; do
  name=$(basename "$f" .weft)
  for threads in 1 2; do
    echo "== weft optimize $f --states $states --threads $threads" >&2
    "$build/weft" optimize "$f" -o "$out/$name.t$threads" --time-budget 0 --states "$states" \
      --converge 0 --baselines off --threads "$threads" --quiet >"$out/$name.t$threads.log" 2>&1 ||
      echo "   failed: see $out/$name.t$threads.log" >&2
  done
done
python3 - "$out" "$states" "${programs[@]}" <<'PY'
import json, pathlib, sys
out, states, programs = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
print(f"States: {int(states):,} per run (`--time-budget 0 --states {states} --converge 0 "
      "--baselines off`); memory is the search's accounted peak (memo, candidates, terms).")
print()
print("| program | threads | search s | states/s | candidates per M states | accounted peak MB "
      "| bytes per state | peak RSS MB | speed-up |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for f in programs:
    name = pathlib.Path(f).stem
    one = None
    for threads in (1, 2):
        d = out / f"{name}.t{threads}"
        try:
            s = json.loads((d / "summary.json").read_text())
            t = json.loads((d / "timing.json").read_text())
        except (OSError, ValueError):
            print(f"| {name} | {threads} | failed: see {d}.log | | | | | | |")
            continue
        secs, n = t["search_s"], s["states"]
        mb = s["peak_accounted_memory_mb"]
        one = secs if threads == 1 else one
        speedup = f"{one / secs:.2f}x" if threads == 2 and one else ""
        print(f"| {name} | {threads} | {secs:.2f} | {n / secs / 1e3:.0f} k | "
              f"{s['candidates'] / n * 1e6:.0f} | {mb:.1f} | {mb * 2**20 / n:.0f} | "
              f"{t['peak_rss_search_mb']:.0f} | {speedup} |")
PY
