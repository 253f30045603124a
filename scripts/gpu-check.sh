#!/usr/bin/env bash
# `make gpu-check`: the one command for a GPU machine, sized to one device call: at most 9.5 minutes
# on one H100 or H200 with 16 cores, from a bare machine, when the binaries come prepared
# (`make gpu-bundle` here, carried as .gpu-bundle). Its steps run in the order of the value of what
# they return, each under its own time limit, and summary.md is written (and copied to $OUT) after
# every step, so a run cut short still reports what it finished:
#
#   probe         nvidia-smi, nvcc, compute-sanitizer, PyTorch
#   binaries      the bundle checked (or, without one, weft built here from carried packages)
#   prebuild      the CUDA units of the examples and test programs, nvcc in parallel
#   kernels       the GPU tests of generated kernels (one process each: a trapped kernel names its
#                 test and cannot poison the others) and the examples' fused µGraphs vs the
#                 interpreter
#   peers         weft vs PyTorch eager (cuBLAS, SDPA) on the same programs, CUDA events, medians
#   profile       Nsight Compute on each fused example's kernel: throughput, occupancy, stalls
#   mpk-tiny      the persistent kernel's GPU tests, the tiny decode vs the per-kernel path, the
#                 hop latency
#   mpk-0.6b      one decode step of the Qwen3-0.6B-shaped program vs the weight-bandwidth floor
#   model-device  a compiled ONNX transformer device-resident vs its CPU run
#   model-megakernel  the same compiled transformer as one persistent kernel (`weft run DIR
#                 --megakernel --backend cuda`) vs the device-resident run
#   (full part)   model-decode: the corpus decoder exported with its KV cache decoded greedily
#                 (`weft decode DIR --megakernel --backend cuda`, one persistent launch a step)
#                 against onnxruntime's tokens and the per-kernel device path's step latency;
#                 model-megakernel-bench: its plan timed by `weft mpk bench PLAN --on gpu`
#   sanitizer     memcheck on a fused kernel and a graph replay; synccheck and racecheck on the
#                 tiny persistent kernel
#
# GPU_CHECK_PART=full runs the long sweeps instead (every program under memcheck and racecheck,
# optimize with torch.compile peers and the cost model's ranking, the mega-kernel's soak and its
# 256-token decode): several calls' worth.
#
# GPU_CHECK_DRY_RUN=1 runs nothing on a GPU: it prints the plan and every command with its limit,
# and fails when a program or file a step needs is missing (make gpu-rehearse runs it here).
#
# Environment: OUT (where results are copied), GPU_CHECK_PART (quick), GPU_CHECK_STEPS (a subset of
# the part's steps, in the order given: a rerun of what changed), GPU_CHECK_BUNDLE
# (.gpu-bundle), WEFT_GPU_BUILD (build-gpu, the fallback build), JOBS (nproc), GPU_CHECK_REPS (50),
# GPU_CHECK_WITHOUT_GPU=1 (run the steps without a GPU: they fail, the script is exercised).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$(pwd)
publish_dir=${OUT:-}
out=$root/gpu-out
part=${GPU_CHECK_PART:-quick}
dry=${GPU_CHECK_DRY_RUN:-0}
bundle=${GPU_CHECK_BUNDLE:-.gpu-bundle}
build=${WEFT_GPU_BUILD:-build-gpu}
jobs=${JOBS:-$(nproc)}
reps=${GPU_CHECK_REPS:-50}
started=$SECONDS
case "$part" in
  quick | full) ;;
  *) echo "gpu-check: GPU_CHECK_PART must be quick or full, not '$part'" >&2; exit 2 ;;
esac
mkdir -p "$out"

# ---- the plan: each step's time limit in seconds ----
# Measured on the first run (H200, 16 cores, 2026-11-28, docs/benchmarks.md): probe 5 s, binaries
# 1, prebuild 4, kernels 21, peers 22, sanitizer 19; mpk-tiny, mpk-0.6b and model-device were cut
# at 60/60/75 s (nvcc builds each persistent kernel and each per-operator kernel in turn); on the
# second, with --step-only, mpk-0.6b took 59 s and model-device 128 s.
if [ -x "$bundle/bin/weft" ]; then binaries_limit=30; else binaries_limit=300; fi
# model-megakernel (new, not yet run on a GPU) took profile's and sanitizer's place in the quick
# part; both ran clean on the first run and are in the full part.
quick_steps=(probe binaries prebuild kernels peers mpk-tiny mpk-0.6b model-device model-megakernel)
declare -A limit=([probe]=15 [binaries]=$binaries_limit [prebuild]=15 [kernels]=35 [peers]=35
  [profile]=45 [mpk-tiny]=120 [mpk-0.6b]=90 [model-device]=135 [model-megakernel]=90
  [sanitizer]=40
  [gpu-tests]=420 [memcheck]=420 [racecheck]=420 [optimize]=420 [prebuild-candidates]=300
  [peers-compile]=420 [ranking]=420 [mpk-racecheck]=420 [mpk-synccheck]=420 [mpk-bench]=420
  [mpk-soak]=300 [mpk-decode-256]=420 [model-megakernel-bench]=300 [model-decode]=240)
full_steps=(probe binaries prebuild model-decode model-megakernel-bench profile sanitizer gpu-tests memcheck
  racecheck optimize prebuild-candidates peers-compile ranking mpk-racecheck mpk-synccheck mpk-bench
  mpk-soak mpk-decode-256)
if [ "$part" = quick ]; then steps=("${quick_steps[@]}"); else steps=("${full_steps[@]}"); fi
# GPU_CHECK_STEPS="binaries mpk-tiny ...": only these steps (a rerun of what changed).
if [ -n "${GPU_CHECK_STEPS:-}" ]; then
  read -r -a steps <<<"$GPU_CHECK_STEPS"
  for s in "${steps[@]}"; do
    [ -n "${limit[$s]:-}" ] || { echo "gpu-check: no step '$s' (GPU_CHECK_STEPS)" >&2; exit 2; }
  done
fi
planned=0
for s in "${steps[@]}"; do planned=$((planned + limit[$s])); done
echo "gpu-check: part $part, planned step budget $planned s ($((planned / 60)) min $((planned % 60)) s;" \
  "limits from the measured times of an H200 with 16 cores, 2026-11-28):"
for s in "${steps[@]}"; do printf '  %-14s %4d s\n' "$s" "${limit[$s]}"; done
if [ "$part" = quick ] && [ $planned -gt 570 ]; then
  echo "gpu-check: the plan's limits exceed 9.5 minutes: without a bundle weft is built here" \
    "first; run \`make gpu-bundle\` where nvcc is and carry .gpu-bundle"
fi

# ---- results ----
names=() results=() durations=()
summary() {
  {
    echo "# gpu-check on ${gpu:-no GPU}"
    echo
    echo "driver ${driver:-none}, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, part $part," \
      "$((SECONDS - started)) s of $planned s planned"
    echo
    echo "| step | result | seconds | limit |"
    echo "| --- | --- | --- | --- |"
    for i in "${!names[@]}"; do
      echo "| ${names[$i]} | ${results[$i]} | ${durations[$i]} | ${limit[${names[$i]}]:-} |"
    done
    local f
    for f in "$out"/figures-*.txt; do
      [ -f "$f" ] || continue
      echo
      echo "## ${f##*/figures-}" | sed 's/\.txt$//'
      echo
      echo '```'
      cat "$f"
      echo '```'
    done
  } >"$out/summary.md"
  publish
}
# Copies what the device tool can bring back (at most 8 files) into $OUT.
publish() {
  [ -n "$publish_dir" ] || return 0
  mkdir -p "$publish_dir"
  local f
  for f in summary.md peers.md peers.json gpu-tests.txt ranking.md; do
    [ -f "$out/$f" ] && cp "$out/$f" "$publish_dir/"
  done
  tar -czf "$publish_dir/gpu-check-logs.tar.gz" -C "$root" --exclude='*.so' --exclude='*.o' \
    --exclude='*.npz' --exclude='compiled' gpu-out 2>/dev/null
  return 0
}
# figures NAME LINES...: key lines of a step, shown in summary.md.
figures() {
  local name=$1
  shift
  printf '%s\n' "$@" >>"$out/figures-$name.txt"
}

# ---- running a step ----
# x COMMAND...: every command a step runs goes through x; a dry run prints it and checks that the
# program exists instead of running it.
x() {
  if [ "$dry" = 1 ]; then
    echo "    $*"
    # The GPU machine's own tools are checked by its probe step, not here.
    case "${1##*/}" in nvidia-smi | compute-sanitizer | ncu) return 0 ;; esac
    # A bundled program still gzipped is there: the binaries step unpacks it before it runs.
    if ! command -v "$1" >/dev/null 2>&1 && [ ! -x "$1" ] && [ ! -f "$1.gz" ]; then
      echo "gpu-check: dry run: '$1' is not a program here" >&2
      return 1
    fi
    # weft's own commands are parsed (not run) by the binary the run would use, so a wrong flag
    # fails the rehearsal; a file an earlier step would have written is allowed to be missing.
    if [ "$1" = "$weft" ]; then
      local msg
      if ! msg=$(WEFT_PARSE_ONLY=1 "$@" 2>&1) && ! grep -q "does not exist" <<<"$msg"; then
        echo "gpu-check: dry run: weft rejects these arguments: $msg" >&2
        return 1
      fi
    fi
    return 0
  fi
  "$@"
}
# need FILE...: a file a step reads (checked in a dry run too).
need() {
  local f
  for f in "$@"; do
    [ -e "$f" ] || { echo "gpu-check: $f is missing"; return 1; }
  done
}
# step NAME FUNCTION: runs FUNCTION under the step's limit, its output in $out/NAME.log.
step() {
  local name=$1 fn=$2 t0=$SECONDS rc
  local lim=${limit[$name]}
  if [ "$dry" = 1 ]; then
    echo "== $name (limit $lim s)"
    "$fn"
    rc=$?
    names+=("$name") durations+=(0)
    if [ $rc -eq 0 ]; then results+=("dry run"); else results+=("FAILED dry run (exit $rc)"); fi
    return 0
  fi
  printf '== %-14s (limit %3d s) ' "$name" "$lim"
  # Its own process group (set -m), so the watchdog stops all of it (nvcc, compute-sanitizer,
  # python) when it outlives its limit.
  set -m
  ("$fn") >"$out/$name.log" 2>&1 &
  local pid=$!
  (sleep "$lim" && echo "gpu-check: step $name stopped at its limit of $lim s" >>"$out/$name.log" &&
    kill -TERM -- -"$pid" && sleep 5 && kill -KILL -- -"$pid") >/dev/null 2>&1 &
  local watchdog=$!
  set +m
  wait "$pid"
  rc=$?
  kill -TERM -- -"$watchdog" 2>/dev/null
  wait "$watchdog" 2>/dev/null
  names+=("$name") durations+=($((SECONDS - t0)))
  if [ $rc -eq 0 ]; then
    results+=(ok)
  elif grep -q "stopped at its limit" "$out/$name.log"; then
    results+=("CUT at its limit")
  else
    results+=("FAILED (exit $rc)")
  fi
  printf '%s in %ds\n' "${results[-1]}" $((SECONDS - t0))
  [ $rc -eq 0 ] || tail -n 12 "$out/$name.log" | sed 's/^/   | /'
  summary
  return 0
}

# ---- the GPU ----
gpu="" driver=""
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
  driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1)
fi
if [ -z "$gpu" ] && [ "$dry" != 1 ]; then
  echo "gpu-check: NO GPU on this machine (nvidia-smi finds none). Run \`make gpu-check\` on a"
  echo "gpu-check: machine with an NVIDIA GPU; GPU_CHECK_DRY_RUN=1 checks the plan without one."
  if [ "${GPU_CHECK_WITHOUT_GPU:-0}" != 1 ]; then
    names+=(gpu) results+=("FAILED: no GPU") durations+=(0)
    summary
    exit 1
  fi
fi
case "$gpu" in
  *H200*) target=h200 ;;
  *A100*) target=a100 ;;
  *) target=h100 ;;
esac
echo "gpu-check: ${gpu:-no GPU} (driver ${driver:-none}), weft target $target, $jobs jobs, logs in $out"
rm -f "$out"/figures-*.txt

# ---- the binaries: the bundle, or a build from carried packages ----
if [ -x "$bundle/bin/weft" ]; then
  bin=$root/$bundle/bin
else
  bin=$root/$build
fi
weft=$bin/weft
tests_bin=$bin/weft_tests
export WEFT_BINARY=$weft WEFT_SOURCE_DIR=$root
# One nvcc cache for the whole run: prebuild fills it for the later steps.
export WEFT_CACHE_DIR=${WEFT_CACHE_DIR:-$out/weft-cache}
sanitizer=$(command -v compute-sanitizer || true)
for s in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
  [ -n "$sanitizer" ] || { [ -x "$s" ] && sanitizer=$s; }
done
[ -n "$sanitizer" ] || sanitizer=compute-sanitizer

probe() {
  x nvidia-smi
  x nvcc --version
  x "$sanitizer" --version
  x python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"
  x nproc
  [ "$dry" = 1 ] || figures probe "${gpu:-no GPU}, driver ${driver:-none}, $(nproc) cores" \
    "$(nvcc --version 2>/dev/null | tail -n 1)"
  return 0
}

build_from_source() {
  # Build dependencies: the machine's own, or the Debian packages carried in .gpu-deps/.
  if ls .gpu-deps/*.deb >/dev/null 2>&1; then
    local prefix
    prefix=$(x scripts/gpu-deps.sh unpack "$root/$build/deps") || return 1
    export CMAKE_PREFIX_PATH=$prefix${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
    export LD_LIBRARY_PATH=$prefix/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  fi
  # Without oneDNN: the CPU library operators are not what a GPU check measures, and the carried
  # packages leave it out (40 MB).
  x cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DWEFT_WERROR=OFF \
    -DWEFT_BUILD_BENCH=OFF -DWEFT_ONEDNN=OFF | tee "$out/cmake.txt" || return 1
  [ "$dry" = 1 ] || grep -q "CUDA runtime enabled" "$out/cmake.txt" ||
    { echo "gpu-check: cmake did not find the CUDA toolkit"; return 1; }
  x ninja -C "$build" -j"$jobs" weft weft_tests
}
binaries() {
  if [ -x "$bundle/bin/weft" ]; then
    x scripts/gpu-bundle.sh unpack "$bundle" || return 1
    x scripts/gpu-bundle.sh check "$bundle" || return 1
    head -n 1 "$bundle/MANIFEST"
  else
    echo "gpu-check: no $bundle: building weft here (make gpu-bundle prepares it where nvcc is)"
    build_from_source || return 1
  fi
  x "$weft" --version
}

# The CUDA units the later steps load, built in parallel (nvcc is the slow part of each).
prebuild_units() {
  # shellcheck disable=SC2016  # the inner script expands its own variables
  printf '%s\n' "$@" | xargs -P "$jobs" -I{} sh -c \
    'd=$(mktemp -d) && "$0" compile "{}" --target "$1" -o "$d" >"$d/log" 2>&1 || { cat "$d/log"; echo "FAILED: {}"; exit 1; }; tail -n 1 "$d/log"; rm -rf "$d"' \
    "$weft" "$target"
}
programs=(examples/rms_norm_linear.weft examples/gated_mlp.weft examples/gqa_attention.weft
  examples/rms_norm_linear.fused.weft examples/gated_mlp.fused.weft examples/gqa_attention.fused.weft
  tests/golden/lower/*.weft)
prebuild() {
  need "${programs[@]}" || return 1
  if [ "$dry" = 1 ]; then
    x "$weft" compile PROGRAM --target "$target" -o DIR
    return
  fi
  prebuild_units "${programs[@]}"
}

# tier_tests LABEL PATTERN: the tests of a tier (tests/tiers.h) whose name matches PATTERN (grep -E).
tier_tests() {
  # A dry run before the bundle is unpacked names the selection instead.
  if [ "$dry" = 1 ] && [ ! -x "$tests_bin" ]; then
    echo "TESTS-OF-TIER-$1-MATCHING-$2"
    return 0
  fi
  "$tests_bin" --weft_list_tiers | awk -F'\t' -v l="$1" '$2 ~ "(^|,)" l "(,|$)" {print $1}' |
    grep -E "$2"
}
# one_test LIMIT NAME: one test in its own process under LIMIT seconds, so that a kernel that traps
# (which poisons its CUDA context) or hangs is named and cannot take other tests down with it.
one_test() {
  local lim=$1 t=$2 r log
  log=$out/tests/$t.log
  timeout -k 5 "$lim" "$tests_bin" --gtest_filter="$t" >"$log" 2>&1
  r=$?
  if [ $r -eq 0 ] && grep -q '^\[  SKIPPED \]' "$log" && [ -n "$gpu" ]; then
    echo "SKIPPED $t although a GPU is present: $(grep -A1 'Skipped' "$log" | tail -n 1)"
    return 1
  fi
  case $r in
    0) echo "ok      $t" ;;
    124 | 137) echo "HUNG    $t (killed after $lim s)" ;;
    *)
      if grep -qiE 'trap|illegal instruction|unspecified launch failure|watchdog' "$log"; then
        echo "TRAPPED $t: $(grep -iE -m1 'trap|illegal|unspecified|watchdog' "$log")"
      else
        echo "FAILED  $t (exit $r): $(grep -m1 -E 'Failure|error' "$log")"
      fi
      ;;
  esac
  return $r
}
# run_tests LIMIT NAME...: the tests, 4 processes at a time (nvcc dominates; the GPU is shared),
# each under LIMIT seconds; their results are appended to gpu-tests.txt.
run_tests() {
  local lim=$1 t
  shift
  if [ "$dry" = 1 ]; then
    for t in "$@"; do echo "    $tests_bin --gtest_filter=$t  (limit $lim s)"; done
    return 0
  fi
  [ $# -gt 0 ] || { echo "no tests to run"; return 1; }
  mkdir -p "$out/tests"
  export -f one_test
  export out tests_bin gpu
  printf '%s\n' "$@" | xargs -P 4 -I{} bash -c 'one_test "$0" "$1"' "$lim" {} |
    tee -a "$out/gpu-tests.txt"
}

kernels() {
  local rc=0 f
  x "$tests_bin" --weft_list_tiers >/dev/null || return 1
  # shellcheck disable=SC2046  # one name per word
  run_tests 50 $(tier_tests gpu '^(GpuBackend|DeviceVm)\.') || rc=1
  for f in examples/*.fused.weft; do
    need "$f" || return 1
    x "$weft" bench "$f" --backend cuda --target "$target" --check --reps 5 || rc=1
  done
  return $rc
}

peers() {
  need bench/gpu_peers.py || return 1
  x python3 bench/gpu_peers.py peers --weft "$weft" --out "$out" --target "$target" \
    --gpu "${gpu:-no GPU}" --driver "${driver:-none}" --reps "$reps" --warmup 10 --no-compile
  local rc=$?
  [ -f "$out/peers.md" ] && figures peers "$(grep '^|' "$out/peers.md")"
  return $rc
}

# Nsight Compute on each fused example's main kernel (k0), one launch after warm-up: where its
# time goes (the first run found every fused kernel 2.5-4.3x its predicted time).
ncu_bin=$(command -v ncu || true)
for n in /usr/local/cuda/bin/ncu /usr/local/cuda/nsight-compute*/ncu; do
  [ -n "$ncu_bin" ] || { [ -x "$n" ] && ncu_bin=$n; }
done
[ -n "$ncu_bin" ] || ncu_bin=ncu
profile() {
  local f name rc=0 log
  for f in examples/*.fused.weft; do
    need "$f" || return 1
    name=$(basename "$f" .fused.weft)
    log=$out/profile-$name.txt
    local cmd=("$ncu_bin" --kernel-name k0 --launch-skip 3 --launch-count 1
      --section SpeedOfLight --section Occupancy --section LaunchStats
      --section MemoryWorkloadAnalysis --section WarpStateStats
      "$weft" bench "$f" --backend cuda --target "$target" --warmup 3 --reps 2)
    if [ "$dry" = 1 ]; then
      x "${cmd[@]}" || rc=1
      continue
    fi
    "${cmd[@]}" >"$log" 2>&1 || rc=1
    figures profile "$name: $(grep -E '^\s+(Duration|DRAM Throughput|Memory Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per Thread|Grid Size|Dynamic Shared Memory Per Block)\s' "$log" |
      awk '{$1=$1; print}' | paste -sd ';' -)"
  done
  return $rc
}

mpk_tiny() {
  local rc=0 log=$out/mpk-tiny-figures.log
  need examples/qwen3_tiny_decode_step.weft || return 1
  : >"$log"
  # shellcheck disable=SC2046
  run_tests 60 $(tier_tests gpu '^Mpk') || rc=1
  x "$weft" mpk run examples/qwen3_tiny_decode_step.weft --on gpu --tokens 8 --prompt 1 2 3 2>&1 |
    tee -a "$log" || rc=1
  # The step alone: `mpk run` above already times the tiny decode's per-token paths.
  x "$weft" mpk bench examples/qwen3_tiny_decode_step.weft --on gpu --reps 20 --step-only 2>&1 |
    tee -a "$log" || rc=1
  x "$weft" mpk hop --on gpu --tasks 1000 2>&1 | tee -a "$log" || rc=1
  [ "$dry" = 1 ] || figures mpk-tiny "$(grep -iE 'token|us|µs|hop|floor' "$log" | head -n 30)"
  return $rc
}

mpk_06b() {
  local f=$out/qwen3_0_6b.weft log=$out/mpk-0.6b-figures.log rc=0
  x "$weft" mpk decoder --config qwen3-0.6b --cache 512 -o "$f" || return 1
  # One step alone: the whole-decode figures seed and place 1.2 GB of weights per decode (the
  # full part's mpk-bench times them).
  x "$weft" mpk bench "$f" --on gpu --reps 5 --iterations-per-launch 2 --step-only 2>&1 |
    tee "$log" || rc=1
  [ "$dry" = 1 ] || figures mpk-0.6b "$(grep -iE 'us|µs|floor|GB/s' "$log" | head -n 20)"
  return $rc
}

model_device() {
  local d=$out/model-device/bert rc=0
  need examples/onnx/bert_tiny.onnx bench/model_inputs.py || return 1
  mkdir -p "$d"
  x python3 bench/model_inputs.py bert 2 16 "$d/inputs.npz" || return 1
  x "$weft" compile examples/onnx/bert_tiny.onnx -o "$d/compiled" --target "$target" \
    --bind batch=2,seq=16 --bound seq=64 --time-budget 15 || return 1
  x "$weft" run "$d/compiled" --inputs "$d/inputs.npz" --outputs "$d/cpu.npz" --backend cpu || rc=1
  x "$weft" run "$d/compiled" --inputs "$d/inputs.npz" --outputs "$d/gpu.npz" --backend cuda ||
    rc=1
  x "$weft" bench "$d/compiled" --inputs "$d/inputs.npz" --backend cuda --reps 10 2>&1 |
    tee "$out/model-device-bench.log" || rc=1
  [ "$dry" = 1 ] || figures model-device "$(tail -n 8 "$out/model-device-bench.log")"
  return $rc
}

# The model-device step's compiled BERT (compiled here when that step did not run) as one
# persistent kernel on the GPU: its outputs against the device-resident run's, its launch time.
model_megakernel() {
  local d=$out/model-device/bert rc=0 log=$out/model-megakernel.log
  need examples/onnx/bert_tiny.onnx bench/model_inputs.py || return 1
  mkdir -p "$d"
  if [ ! -f "$d/gpu.npz" ] || [ ! -d "$d/compiled" ]; then
    x python3 bench/model_inputs.py bert 2 16 "$d/inputs.npz" || return 1
    x "$weft" compile examples/onnx/bert_tiny.onnx -o "$d/compiled" --target "$target" \
      --bind batch=2,seq=16 --bound seq=64 --time-budget 5 || return 1
    x "$weft" run "$d/compiled" --inputs "$d/inputs.npz" --outputs "$d/gpu.npz" --backend cuda ||
      return 1
  fi
  x "$weft" run "$d/compiled" --inputs "$d/inputs.npz" --outputs "$d/megakernel.npz" \
    --megakernel --backend cuda --save-plan "$d/megakernel.plan" 2>&1 | tee "$log" || rc=1
  x python3 -c "
import numpy as np, sys
a, b = np.load('$d/megakernel.npz'), np.load('$d/gpu.npz')
worst = max(float(np.abs(a[k] - b[k]).max() / max(np.abs(b[k]).max(), 1e-30)) for k in b)
print(f'megakernel vs device-resident: largest scaled difference {worst:.3g}')
sys.exit(0 if worst <= 1e-5 else 1)" 2>&1 | tee -a "$log" || rc=1
  [ "$dry" = 1 ] || figures model-megakernel "$(grep -E 'megakernel' "$log" | head -n 6)"
  return $rc
}

# The model-megakernel step's plan (made here when that step did not run) timed: per-kernel
# launches, their CUDA graph and the persistent kernel against the weight-bandwidth floor.
full_model_megakernel_bench() {
  local d=$out/model-device/bert log=$out/model-megakernel-bench.log
  [ -f "$d/megakernel.plan" ] || model_megakernel || return 1
  x "$weft" mpk bench "$d/megakernel.plan" --on gpu --reps 20 2>&1 | tee "$log" || return 1
  [ "$dry" = 1 ] || figures model-megakernel-bench "$(grep -iE 'us|µs|floor|GB/s' "$log" | head -n 12)"
}

# The corpus decoder exported with its KV cache (examples/onnx/corpus/llama_kv_*) compiled at the
# decode step of a 36-slot cache and decoded greedily: each step one persistent launch on the GPU
# (its tokens onnxruntime's), and on the VM with the device executor (a launch per kernel, the
# cache copied in and out each step) for the step latency beside it.
full_model_decode() {
  local m=examples/onnx/corpus/llama_kv_classic_dynamic d=$out/model-decode rc=0
  local log=$out/model-decode.log
  need "$m.onnx" "$m.greedy.npz" || return 1
  mkdir -p "$d"
  x "$weft" compile "$m.onnx" -o "$d/compiled" --target "$target" \
    --bind batch=1,seq=1,past_seq=36,total_seq=37 --bound batch=4 --bound past_seq=64 \
    --bound seq=64 --bound total_seq=64 --time-budget 5 --megakernel || return 1
  local prompt=1,2,3 bandwidth=3.35e12  # H100 SXM HBM3
  case "$target" in h200) bandwidth=4.8e12 ;; a100) bandwidth=2.0e12 ;; esac
  if [ "$dry" != 1 ]; then
    prompt=$(python3 -c "import numpy as np; print(','.join(map(str, np.load('$m.greedy.npz')['prompt'])))") ||
      return 1
  fi
  x "$weft" decode "$d/compiled" --prompt "$prompt" --tokens 33 --megakernel --backend cuda \
    --json "$d/megakernel.json" 2>&1 | tee "$log" || rc=1
  x "$weft" decode "$d/compiled" --prompt "$prompt" --tokens 33 --capacity 36 --backend cuda \
    --json "$d/per-kernel.json" 2>&1 | tee -a "$log" || rc=1
  x python3 -c "
import json, sys, numpy as np
z = np.load('$m.greedy.npz')
want = [int(z['prompt_token'][0])] + [int(t) for t in z['tokens']]
mk, pk = (json.load(open('$d/' + f + '.json')) for f in ('megakernel', 'per-kernel'))
floor_us = mk['setup_bytes'] / $bandwidth * 1e6  # every placed byte read once a step
print(f'model-decode: tokens equal to onnxruntime: megakernel {mk[\"tokens\"] == want}, '
      f'per-kernel {pk[\"tokens\"] == want}')
print(f'model-decode: median step {mk[\"median_step_seconds\"] * 1e6:.1f} us one persistent launch, '
      f'{pk[\"median_step_seconds\"] * 1e6:.1f} us per-kernel device VM; bytes placed '
      f'{mk[\"setup_bytes\"]}, floor {floor_us:.3f} us '
      f'({floor_us / (mk[\"median_step_seconds\"] * 1e6):.2%} of the step)')
sys.exit(0 if mk['tokens'] == want and pk['tokens'] == want else 1)" 2>&1 | tee -a "$log" || rc=1
  [ "$dry" = 1 ] || figures model-decode "$(grep -E 'model-decode|decode: (built|[0-9]+ steps)' "$log" | head -n 8)"
  return $rc
}

# cs TOOL COMMAND...: compute-sanitizer with errors as exit 97.
cs() {
  local tool=$1
  shift
  if [ "$dry" = 1 ]; then
    echo "    $sanitizer --tool $tool ... under:"
    x "$@"
    return
  fi
  "$sanitizer" --tool "$tool" --error-exitcode 97 --target-processes application-only "$@"
}
sanitizer_sample() {
  local rc=0
  cs memcheck "$weft" run examples/rms_norm_linear.fused.weft --backend cuda --target "$target" ||
    rc=1
  cs memcheck "$tests_bin" --gtest_filter='DeviceVm.OnAGpu*' || rc=1
  cs synccheck "$weft" mpk run examples/tiny_decoder_step.weft --on gpu --tokens 2 || rc=1
  cs racecheck "$weft" mpk run examples/tiny_decoder_step.weft --on gpu --tokens 2 || rc=1
  return $rc
}

# ---- the long sweeps (GPU_CHECK_PART=full) ----
full_gpu_tests() {
  # shellcheck disable=SC2046
  run_tests 300 $(tier_tests gpu '.')
}
sweep() {
  local tool=$1 f rc=0
  for f in tests/golden/lower/*.weft examples/*.weft; do
    cs "$tool" "$weft" run "$f" --backend cuda --target "$target" || { echo "FAILED: $f"; rc=1; }
  done
  return $rc
}
full_memcheck() { sweep memcheck; }
full_racecheck() { sweep racecheck; }
optimize_all() {
  local ex rc=0
  for ex in rms_norm_linear gated_mlp gqa_attention; do
    x "$weft" optimize "examples/$ex.weft" -o "$out/optimize/$ex" --target "$target" \
      --time-budget 20 --top-k 10 --quiet || rc=1
  done
  return $rc
}
prebuild_candidates() {
  shopt -s nullglob
  local c=("$out"/optimize/*/top-*.weft)
  shopt -u nullglob
  [ "$dry" = 1 ] && { x "$weft" compile CANDIDATE --target "$target" -o DIR; return; }
  prebuild_units "${c[@]}"
}
peer_args() {
  echo --weft "$weft" --out "$out" --optimized "$out/optimize" --target "$target" \
    --gpu "${gpu:-no GPU}" --driver "${driver:-none}" --reps 200
}
# shellcheck disable=SC2046
full_peers() { x python3 bench/gpu_peers.py peers $(peer_args); }
# shellcheck disable=SC2046
full_ranking() { x python3 bench/gpu_peers.py ranking $(peer_args); }
mpk_sanitize() {
  # shellcheck disable=SC2046
  cs "$1" "$tests_bin" --gtest_filter="$(tier_tests gpu '^Mpk' | paste -sd:)"
}
full_mpk_racecheck() { mpk_sanitize racecheck; }
full_mpk_synccheck() { mpk_sanitize synccheck; }
full_mpk_bench() {
  local f=$out/qwen3_0_6b.weft
  x "$weft" mpk bench examples/qwen3_tiny_decode_step.weft --on gpu &&
    x "$weft" mpk bench examples/qwen3_tiny_decode_step.weft --on gpu --dispatch aot &&
    x "$weft" mpk decoder --config qwen3-0.6b --cache 512 -o "$f" &&
    x "$weft" mpk bench "$f" --on gpu --reps 10 --iterations-per-launch 4 &&
    x "$weft" mpk decoder --config qwen3-0.6b --cache 512 --tile 32 --kv-splits 8 \
      -o "$out/qwen3_0_6b_t32.weft" &&
    x "$weft" mpk bench "$out/qwen3_0_6b_t32.weft" --on gpu --reps 10 --iterations-per-launch 4
}
full_mpk_soak() {
  x "$weft" mpk bench examples/qwen3_tiny_decode_step.weft --on gpu --warmup 0 --reps 1 \
    --iterations-per-launch 1000
}
full_mpk_decode() {
  local f=$out/qwen3_0_6b.weft
  [ -f "$f" ] || x "$weft" mpk decoder --config qwen3-0.6b --cache 512 -o "$f" || return 1
  x "$weft" mpk run "$f" --on gpu --workers 0 --tokens 256 --prompt 1 2 3 --no-host-reference &&
    x "$weft" mpk run "$f" --on gpu --workers 0 --tokens 64 --prompt 1 2 3 \
      --tokens-per-launch 16 --no-host-reference &&
    x "$weft" mpk run "$f" --on gpu --workers 0 --tokens 16 --prompt 1 2 3 --host-loop
}

declare -A fn=([probe]=probe [binaries]=binaries [prebuild]=prebuild [kernels]=kernels
  [peers]=peers [profile]=profile [mpk-tiny]=mpk_tiny [mpk-0.6b]=mpk_06b [model-device]=model_device
  [model-megakernel]=model_megakernel [model-megakernel-bench]=full_model_megakernel_bench
  [model-decode]=full_model_decode
  [sanitizer]=sanitizer_sample [gpu-tests]=full_gpu_tests [memcheck]=full_memcheck
  [racecheck]=full_racecheck [optimize]=optimize_all [prebuild-candidates]=prebuild_candidates
  [peers-compile]=full_peers [ranking]=full_ranking [mpk-racecheck]=full_mpk_racecheck
  [mpk-synccheck]=full_mpk_synccheck [mpk-bench]=full_mpk_bench [mpk-soak]=full_mpk_soak
  [mpk-decode-256]=full_mpk_decode)
rm -f "$out/gpu-tests.txt"
for s in "${steps[@]}"; do
  step "$s" "${fn[$s]}"
  if [ "$s" = binaries ] && [ "${results[-1]}" != ok ] && [ "$dry" != 1 ]; then
    echo "gpu-check: no usable weft binary, nothing else can run"
    break
  fi
done

summary
cat "$out/summary.md"
failed=0
for r in "${results[@]}"; do
  case "$r" in ok | "dry run") ;; *) failed=1 ;; esac
done
if [ $failed -ne 0 ]; then
  echo "gpu-check: FAILED; results in $out${publish_dir:+ and $publish_dir}"
  exit 1
fi
echo "gpu-check: part $part passed in $((SECONDS - started)) s; results in $out${publish_dir:+ and $publish_dir}"
