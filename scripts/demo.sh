#!/usr/bin/env bash
# `make demo`: check the bundled examples, then superoptimize RMSNorm + Linear and show the result.
set -euo pipefail
weft=${1:-build/weft}
out=${WEFT_DEMO_OUT:-out/demo}
budget=${WEFT_DEMO_BUDGET:-60}
cd "$(dirname "$0")/.."

echo "== The input program"
cat examples/rms_norm_linear.weft
echo
echo "== weft check: every example is a valid µGraph on h100"
for f in examples/*.weft; do printf '%-36s ' "$f"; "$weft" check "$f"; done
echo
echo "== The hand-written fused kernel matches the input program (reference interpreter, f32)"
"$weft" run examples/rms_norm_linear.fused.weft --compare examples/rms_norm_linear.weft | tail -n 1
echo
echo "== weft optimize examples/rms_norm_linear.weft (search budget ${budget} s, then verification)"
"$weft" optimize examples/rms_norm_linear.weft -o "$out" --time-budget "$budget" --progress
echo
echo "== The best µGraph found ($out/best.weft)"
cat "$out/best.weft"
if command -v dot >/dev/null; then
  "$weft" dot "$out/best.weft" -o "$out/best.svg"
  echo
  echo "== Picture of the hierarchy: $out/best.svg"
fi
