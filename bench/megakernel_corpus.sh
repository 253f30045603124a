#!/usr/bin/env bash
# Real exporter output as one persistent kernel (docs/mpk.md, "Whole models"): each corpus model
# named is compiled for h100 (`--time-budget 5 --no-build`, no bindings: a fixed-shape model is
# specialized at its shape, a dynamic one runs every operator as a model kernel), run with
# `weft run DIR --megakernel` in host emulation on its .ref0.npz inputs, and compared with
# onnxruntime's outputs there (|got - want| / (0.1 + |want|) < 1e-3: rtol 1e-3, atol 1e-4).
# usage: bench/megakernel_corpus.sh [NAME...]   (default: every *_fixed model; WORK=/tmp/weft-mk)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
weft=${WEFT:-build/weft}
python=${WEFT_PYTHON:-build/venv/bin/python}
work=${WORK:-/tmp/weft-mk}
corpus=examples/onnx/corpus
mkdir -p "$work"
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for f in "$corpus"/*_fixed.onnx; do names+=("$(basename "$f" .onnx)"); done
fi
failed=0
for n in "${names[@]}"; do
  d=$work/$n
  "$python" -c "
import numpy as np, sys
a = np.load(sys.argv[1])
np.savez(sys.argv[2], **{k[6:]: v for k, v in a.items() if k.startswith('input.')})" \
    "$corpus/$n.ref0.npz" "$work/$n.in.npz" || { failed=1; continue; }
  if [ ! -d "$d" ]; then
    "$weft" compile "$corpus/$n.onnx" -o "$d" --target h100 --time-budget 5 --no-build \
      >"$d.compile.log" 2>&1 || { echo "$n: compile failed: $(tail -n 1 "$d.compile.log")"; failed=1; continue; }
  fi
  "$weft" run "$d" --inputs "$work/$n.in.npz" --outputs "$work/$n.out.npz" --megakernel \
    >"$d.run.log" 2>&1 || { echo "$n: run failed: $(grep -m 2 error "$d.run.log")"; failed=1; continue; }
  "$python" - "$corpus/$n.ref0.npz" "$work/$n.out.npz" "$n" "$d.run.log" <<'PY' || failed=1
import sys
import numpy as np
ref, out, name, log = sys.argv[1:]
a, b = np.load(ref), np.load(out)
worst = 0.0
for k, v in a.items():
    if k.startswith("output."):
        got, want = b[k[7:]].astype(np.float64), v.astype(np.float64)
        worst = max(worst, float((np.abs(got - want) / (0.1 + np.abs(want))).max()))
print(f"{name}: {'ok' if worst < 1e-3 else 'MISMATCH'} (worst {worst:.2g}) {open(log).readline().strip()}")
sys.exit(0 if worst < 1e-3 else 1)
PY
done
exit $failed
