#!/usr/bin/env bash
# Runs the parser fuzzer briefly with a seed corpus of the examples and the bad-input corpus;
# fails on any crash, sanitizer report or round-trip mismatch. Usage: run-fuzzer.sh BINARY [SECONDS]
set -euo pipefail
bin=${1:?usage: run-fuzzer.sh BINARY [SECONDS]}
seconds=${2:-30}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/artifacts"
cp "$root"/examples/*.weft "$work/corpus/"
cp "$root"/tests/bad/*.weft "$work/corpus/" 2>/dev/null || true
echo "fuzzing $bin for ${seconds}s with $(ls "$work/corpus" | wc -l) seed files"
"$bin" "$work/corpus" -max_len=4096 -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$work/artifacts/" -print_final_stats=1 2>"$work/log" || {
  tail -60 "$work/log"
  mkdir -p "$root/build-fuzz-artifacts"
  cp "$work"/artifacts/* "$root/build-fuzz-artifacts/" 2>/dev/null || true
  echo "parse_fuzzer FAILED (crashing inputs copied to build-fuzz-artifacts/)"
  exit 1
}
grep -E "^stat::number_of_executed_units|Done" "$work/log" || true
echo "parse_fuzzer: no crashes"
