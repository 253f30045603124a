#!/usr/bin/env bash
# Runs a parser fuzzer briefly with a seed corpus of the examples and the bad-input corpus (.weft
# for parse_fuzzer; .wmod for model_fuzzer); fails on any crash, sanitizer report or round-trip
# mismatch. Usage: run-fuzzer.sh BINARY [SECONDS]
set -euo pipefail
bin=${1:?usage: run-fuzzer.sh BINARY [SECONDS]}
seconds=${2:-30}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/artifacts"
name=$(basename "$bin")
dict=()
if [ "$name" = model_fuzzer ]; then
  cp "$root"/examples/models/*.wmod "$root"/tests/model/*.wmod "$work/corpus/"
  cp "$root"/tests/bad_model/*.wmod "$work/corpus/" 2>/dev/null || true
  # Every operator of the table (ir/ops.def) and every dtype as dictionary words, so mutations
  # reach operators no seed calls: a new table row is fuzzed without a new seed file.
  grep -o 'OP([a-z_0-9]*,' "$root/ir/ops.def" | sed 's/^OP(\(.*\),$/"\1("/' | grep -v '^"kind("$' >"$work/dict"
  printf '"%s["\n' f32 f16 bf16 f64 i64 i32 i16 i8 u8 bool >>"$work/dict"
  dict=(-dict="$work/dict")
  echo "dictionary: $(wc -l <"$work/dict") words"
else
  cp "$root"/examples/*.weft "$work/corpus/"
  cp "$root"/tests/bad/*.weft "$work/corpus/" 2>/dev/null || true
fi
echo "fuzzing $bin for ${seconds}s with $(ls "$work/corpus" | wc -l) seed files"
"$bin" "$work/corpus" -max_len=4096 -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$work/artifacts/" -print_final_stats=1 "${dict[@]}" 2>"$work/log" || {
  tail -60 "$work/log"
  mkdir -p "$root/build-fuzz-artifacts"
  cp "$work"/artifacts/* "$root/build-fuzz-artifacts/" 2>/dev/null || true
  echo "$name FAILED (crashing inputs copied to build-fuzz-artifacts/)"
  exit 1
}
grep -E "^stat::number_of_executed_units|Done" "$work/log" || true
echo "$name: no crashes"
