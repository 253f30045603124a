#!/usr/bin/env bash
# Randomized soak of the host task-graph runtime (docs/mpk.md): RUNS runs of `weft mpk run` on the
# tiny decoder with random workers (1, 2, 7, 32), dispatch (aot, jit, hybrid), schedulers, token
# counts and injected delays. Each run compares every token and logit with sequential execution
# and fails on a watchdog trip. Not a unit test: 1000 runs take several minutes.
#   bench/mpk_soak.sh [WEFT_BINARY] [RUNS] [SEED]
set -euo pipefail
weft=${1:-build/weft}
runs=${2:-1000}
seed=${3:-1}
program=${PROGRAM:-examples/tiny_decoder_step.weft}
RANDOM=$seed
workers=(1 2 7 32)
dispatch=(aot jit hybrid)
failed=0
start=$(date +%s)
for ((i = 1; i <= runs; i++)); do
  w=${workers[RANDOM % 4]}
  d=${dispatch[RANDOM % 3]}
  s=$((1 + RANDOM % 3))
  t=$((1 + RANDOM % 16))
  delay=$((1 + RANDOM))
  if ! out=$("$weft" mpk run "$program" --workers "$w" --dispatch "$d" --schedulers "$s" \
      --tokens "$t" --delay-seed "$delay" 2>&1); then
    failed=$((failed + 1))
    echo "run $i FAILED: --workers $w --dispatch $d --schedulers $s --tokens $t --delay-seed $delay"
    echo "$out" | tail -3
  fi
  if ((i % 50 == 0)); then echo "$i/$runs runs, $failed failed, $(($(date +%s) - start)) s" >&2; fi
done
echo "mpk soak: $runs runs, $failed failed, $(($(date +%s) - start)) s"
test "$failed" -eq 0
