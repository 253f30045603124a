#!/usr/bin/env bash
# The search against the rules on programs no rule was written for (issue 33, item 3): for each
# program, the best rule-built candidate (`--baselines on --states 1`: the baselines and nothing
# searched), the search alone (`--baselines off`) and the search seeded by the baselines
# (`--baselines seed`), same budget and threads, and a Markdown table of which wins (the rules or
# the search alone) and by how much. Usage:
#   scripts/beyond-rules.sh [BUILD] [PROGRAM.weft ...]   (WEFT_BEYOND_BUDGET: seconds, 60)
set -uo pipefail
build=${1:-build}
shift || true
budget=${WEFT_BEYOND_BUDGET:-60}
cd "$(dirname "$0")/.."
programs=("$@")
if [ ${#programs[@]} -eq 0 ]; then
  programs=(bench/beyond_rules/*.weft)
fi
out=out/beyond-rules
mkdir -p "$out"
for f in "${programs[@]}"; do
  name=$(basename "$f" .weft)
  echo "== $f: rules" >&2
  "$build/weft" optimize "$f" -o "$out/$name.rules" --time-budget "$budget" --baselines on \
    --states 1 --quiet >"$out/$name.rules.log" 2>&1
  echo "== $f: search" >&2
  "$build/weft" optimize "$f" -o "$out/$name.search" --time-budget "$budget" --baselines off \
    --quiet >"$out/$name.search.log" 2>&1
  echo "== $f: seeded" >&2
  "$build/weft" optimize "$f" -o "$out/$name.seed" --time-budget "$budget" --baselines seed \
    --quiet >"$out/$name.seed.log" 2>&1
done
python3 - "$out" "$budget" "${programs[@]}" <<'PY'
import json, pathlib, sys
out, budget, programs = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
print("| program | input (us) | rules' best (us), rule | search alone (us), from | winner | rules / search "
      "| seeded (us), from |")
print("| --- | --- | --- | --- | --- | --- | --- |")
wins = 0
for f in programs:
    name = pathlib.Path(f).stem
    try:
        rules = json.loads((out / f"{name}.rules" / "summary.json").read_text())
        search = json.loads((out / f"{name}.search" / "summary.json").read_text())
        r, s = rules["top"][0], search["top"][0]
    except (OSError, ValueError, KeyError, IndexError):
        print(f"| {name} | failed: see {out}/{name}.*.log | | | | | |")
        continue
    try:
        seed = json.loads((out / f"{name}.seed" / "summary.json").read_text())["top"][0]
        seeded = f"{seed['predicted_us']:.2f}, {seed['origin']}"
    except (OSError, ValueError, KeyError, IndexError):
        seeded = f"failed: see {out}/{name}.seed.log"
    ratio = r["predicted_us"] / s["predicted_us"]
    winner = "search" if ratio > 1 + 1e-9 else ("tie" if ratio > 1 - 1e-9 else "rules")
    wins += winner == "search"
    print(f"| {name} | {rules['input_predicted_us']:.2f} | {r['predicted_us']:.2f}, {r['origin']} | "
          f"{s['predicted_us']:.2f}, {s['origin']} | {winner} | {ratio:.2f} | {seeded} |")
print(f"\nThe search beats the rules on {wins} of {len(programs)}; budget {budget} s per run "
      "(search and verification), default configuration otherwise.")
PY
