#!/usr/bin/env bash
# `make gpu-rehearse` (part of `make test`): rehearses `make gpu-check` on a machine without a GPU,
# so that the rare minutes on a GPU machine are not lost to a broken bundle, a missing package or a
# wrong flag. It fails on exactly those breaks:
#   1. the bundle (scripts/gpu-bundle.sh) is built from BUILD_DIR and checked: every library
#      resolves inside it or to the system's allowed set, it fits 60 MiB, its binaries run from
#      another directory with the checkout given only by $WEFT_SOURCE_DIR;
#   2. the fallback build is configured from the carried packages alone (.gpu-deps, system prefixes
#      ignored, as on a machine without them): CUDA and ONNX must be enabled and every dependency
#      found inside the carried prefix;
#   3. the check script's steps are dry-run with their time limits (every program they run exists,
#      weft accepts every command line), and the quick plan must fit 9.5 minutes;
#   4. negative controls: a bundle missing a library and a package set missing zlib1g-dev must
#      both be refused, or the checks above prove nothing.
# Usage: scripts/gpu-rehearse.sh [BUILD_DIR]   (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build=${1:-build}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "gpu-rehearse: FAILED: $*" >&2
  exit 1
}
say() { echo "gpu-rehearse: $*"; }

# 1. The bundle.
scripts/gpu-bundle.sh "$build" || fail "the bundle does not check out"
# As the GPU machine gets it: a copy, its gzipped libraries unpacked (gpu-check.sh does so).
carried="$work/carried"
cp -r .gpu-bundle "$carried"
scripts/gpu-bundle.sh unpack "$carried" || fail "the bundle's libraries do not unpack"
(cd "$work" && env -u LD_LIBRARY_PATH WEFT_SOURCE_DIR="$root" WEFT_BINARY="$carried/bin/weft" \
  "$carried/bin/weft_tests" --gtest_filter='RoundTrip.*:Parser.EveryExample*' \
  --gtest_brief=1 >"$work/bundle-tests.log" 2>&1) ||
  { cat "$work/bundle-tests.log"; fail "the bundled weft_tests do not pass from another directory"; }
gpu_tests=$("$carried/bin/weft_tests" --weft_list_tiers | awk -F'\t' '$2 ~ /(^|,)gpu(,|$)/' | wc -l)
[ "$gpu_tests" -gt 0 ] || fail "the bundled weft_tests list no test of the gpu tier"
(cd "$work" && env -u LD_LIBRARY_PATH "$carried/bin/weft" check \
  "$root/examples/rms_norm_linear.weft" >/dev/null) || fail "the bundled weft cannot check an example"
say "bundle ok ($gpu_tests GPU tests listed; runs from another directory)"

# 2. The fallback build from the carried packages alone.
wanted=$(sed -n '/^packages=(/,/)/p' scripts/gpu-deps.sh | md5sum | cut -d' ' -f1)
if [ "$(cat .gpu-deps/.packages 2>/dev/null)" != "$wanted" ]; then
  scripts/gpu-deps.sh fetch || fail "the carried packages cannot be fetched (make gpu-deps)"
  echo "$wanted" >.gpu-deps/.packages
fi
# configure_from DEPS_DIR PREFIX_DIR BUILD_DIR: configures against DEPS_DIR's packages alone.
configure_from() {
  local deps=$1 prefix_dir=$2 b=$3 prefix
  prefix=$(GPU_DEPS_DIR=$deps scripts/gpu-deps.sh unpack "$prefix_dir") || return 1
  CMAKE_PREFIX_PATH=$prefix cmake -S . -B "$b" -G Ninja -DCMAKE_SYSTEM_IGNORE_PREFIX_PATH=/usr \
    -DCMAKE_BUILD_TYPE=Release -DWEFT_BUILD_BENCH=OFF -DWEFT_ONEDNN=OFF >"$b.log" 2>&1
}
configure_from .gpu-deps "$work/prefix" "$work/fallback" ||
  { tail -n 20 "$work/fallback.log"; fail "the fallback build does not configure from .gpu-deps"; }
grep -q "CUDA runtime enabled" "$work/fallback.log" || fail "the fallback build has no CUDA runtime"
grep -q "ONNX import enabled" "$work/fallback.log" || fail "the fallback build has no ONNX import"
outside=$(grep -E '^[A-Za-z0-9_]+_(DIR|LIBRARY|LIBRARY_RELEASE|INCLUDE_DIR):(PATH|FILEPATH)=/' \
  "$work/fallback/CMakeCache.txt" |
  grep -vE "=($work/prefix|/usr/local/cuda|(/usr)?/lib/x86_64-linux-gnu/lib(rt|dl|pthread|m)\.)" ||
  true)
[ -z "$outside" ] || fail "the fallback build found dependencies outside the carried packages:
$outside"
say "fallback build configures from .gpu-deps alone (CUDA and ONNX enabled)"

# 3. The check script, dry-run.
GPU_CHECK_DRY_RUN=1 scripts/gpu-check.sh >"$work/dry.log" 2>&1 ||
  { cat "$work/dry.log"; fail "the dry run of make gpu-check failed"; }
planned=$(sed -n 's/.*planned step budget \([0-9]*\) s.*/\1/p' "$work/dry.log" | head -n 1)
[ -n "$planned" ] && [ "$planned" -le 570 ] ||
  fail "make gpu-check plans ${planned:-?} s, over the 9.5 minutes of one device call"
say "gpu-check dry run ok: $planned s planned for the quick part"

# 4. Negative controls.
cp -r .gpu-bundle "$work/bundle"
victim=$(ls -S "$work/bundle/lib" | head -n 1)
rm "$work/bundle/lib/$victim"
if scripts/gpu-bundle.sh check "$work/bundle" >"$work/neg1.log" 2>&1; then
  fail "a bundle without $victim passed its check"
fi
grep -q "${victim%.gz}" "$work/neg1.log" || fail "the check of a bundle without $victim does not name it"
mkdir "$work/deps"
cp .gpu-deps/*.deb "$work/deps/"
rm "$work/deps"/zlib1g-dev_*.deb
if configure_from "$work/deps" "$work/prefix2" "$work/fallback2"; then
  fail "the fallback build configured without zlib1g-dev"
fi
say "negative controls ok: a bundle without $victim and packages without zlib1g-dev are refused"
say "passed"
