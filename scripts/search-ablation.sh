#!/usr/bin/env bash
# The search measured without its safety net (issue 33): `weft optimize` on each program with the
# rule-built baselines on and off, same budget and threads, and a Markdown table of what each
# found (best predicted time, where it came from, when it was found). Usage:
#   scripts/search-ablation.sh [BUILD] [PROGRAM.weft ...]   (WEFT_ABLATION_BUDGET: seconds, 120)
set -uo pipefail
build=${1:-build}
shift || true
budget=${WEFT_ABLATION_BUDGET:-120}
cd "$(dirname "$0")/.."
programs=("$@")
if [ ${#programs[@]} -eq 0 ]; then
  programs=(examples/rms_norm_linear.weft examples/gated_mlp.weft bench/programs/lora.weft
            bench/programs/ntrans.weft bench/programs/qknorm.weft examples/gqa_attention.weft)
fi
out=out/ablation
mkdir -p "$out"
for f in "${programs[@]}"; do
  name=$(basename "$f" .weft)
  for mode in on off; do
    echo "== weft optimize $f --baselines $mode --time-budget $budget" >&2
    start=$(date +%s.%N)
    "$build/weft" optimize "$f" -o "$out/$name.$mode" --time-budget "$budget" --baselines "$mode" \
      --quiet >"$out/$name.$mode.log" 2>&1
    rc=$?
    end=$(date +%s.%N)
    printf '{"exit_code": %d, "wall_clock_s": %.1f}\n' "$rc" "$(echo "$end - $start" | bc)" \
      >"$out/$name.$mode.run.json"
  done
done
python3 - "$out" "$budget" "${programs[@]}" <<'EOF'
import json, pathlib, sys
out, budget, programs = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
print(f"| program | input (us) | baselines on: best (us), from | baselines off: best (us), from | off / on | off: stop, states |")
print("| --- | --- | --- | --- | --- | --- |")
for f in programs:
    name = pathlib.Path(f).stem
    row = {}
    for mode in ("on", "off"):
        try:
            s = json.loads((out / f"{name}.{mode}" / "summary.json").read_text())
        except (OSError, ValueError):
            row[mode] = None
            continue
        best = s["top"][0] if s.get("top") else None
        row[mode] = (s, best)
    if not row.get("on") or not row.get("off") or not row["on"][1] or not row["off"][1]:
        print(f"| {name} | failed: see {out}/{name}.*.log | | | | |")
        continue
    (son, bon), (soff, boff) = row["on"], row["off"]
    print(f"| {name} | {son['input_predicted_us']:.2f} | {bon['predicted_us']:.2f}, {bon['origin']} | "
          f"{boff['predicted_us']:.2f}, {boff['origin']} | {boff['predicted_us'] / bon['predicted_us']:.2f} | "
          f"{soff['stop_reason']}, {soff['states']:,} |")
print(f"\nBudget {budget} s per run (search and verification), default configuration otherwise.")
EOF
