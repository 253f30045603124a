#!/usr/bin/env bash
# `make gpu-check`: the one command for a GPU machine. Builds Release in build-gpu, runs the GPU
# tests, compute-sanitizer (memcheck, racecheck) on every example at test size, weft vs PyTorch
# peers, and the cost model's rank correlation on the top-k of `weft optimize`. A failing step does
# not stop the others; the script exits non-zero at the end, after a summary.
#
# Three parts, each under the device tool's 10-minute limit per command on a 16-core H100 machine
# (GPU_CHECK_PART): 1 = build, tests, sanitizers; 2 = search, peers, ranking; 3 = the persistent
# mega-kernel (docs/mpk.md): its GPU tests, compute-sanitizer racecheck and synccheck on them,
# the hop chain; 4 = its benches, the 1,000-iteration soak and the 256-token decode of the 0.6B
# step (each part reuses build-gpu when the machine is still warm, else rebuilds); all (default)
# = all.
#
# Logs go to a work folder (gpu-out); what comes back from the device tool is limited to 8 files
# two folders deep, so $OUT gets summary.md, peers.md/json, ranking.md/json, gpu-tests.xml and
# one gpu-check-logs.tar.gz of the work folder, refreshed after every step (a run cut short at its
# time limit still returns what it finished).
#
# Dependencies: a GPU machine without a package registry builds against the Debian packages of
# .gpu-deps/ (fetched here by `make gpu-deps`, carried along: run(carry=[".gpu-deps"])), unpacked
# to a private prefix; nothing is installed.
#
# Environment: OUT, GPU_CHECK_PART (all), WEFT_GPU_BUILD (build-gpu), JOBS (nproc),
# GPU_CHECK_SEARCH_BUDGET (seconds of search per example, 20), GPU_CHECK_TOP_K (10),
# GPU_CHECK_REPS (200), GPU_CHECK_STEP_TIMEOUT (seconds per step, 420),
# GPU_CHECK_WITHOUT_GPU=1 (run the steps anyway without a GPU: a dry run of the script),
# GPU_CHECK_SKIP_BUILD=1 (use the existing build directory as it is).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$(pwd)
publish_dir=${OUT:-}
out=$root/gpu-out
mkdir -p "$out"
part=${GPU_CHECK_PART:-all}
build=${WEFT_GPU_BUILD:-build-gpu}
jobs=${JOBS:-$(nproc)}
budget=${GPU_CHECK_SEARCH_BUDGET:-20}
top_k=${GPU_CHECK_TOP_K:-10}
reps=${GPU_CHECK_REPS:-200}
step_timeout=${GPU_CHECK_STEP_TIMEOUT:-420}
weft=$root/$build/weft
# One nvcc cache for the whole run: the parallel prebuild below fills it for the later steps.
export WEFT_CACHE_DIR=${WEFT_CACHE_DIR:-$root/$build/weft-cache}
export WEFT_BINARY=$weft
examples=(rms_norm_linear gated_mlp gqa_attention)
started=$SECONDS
case "$part" in
  1 | 2 | 3 | 4 | all) ;;
  *) echo "gpu-check: GPU_CHECK_PART must be 1, 2, 3, 4 or all, not '$part'" >&2; exit 2 ;;
esac
in_part() { [ "$part" = all ] || [ "$part" = "$1" ]; }

names=() results=() durations=()
# step NAME COMMAND...: runs COMMAND with its output in $out/NAME.log and records the result.
step() {
  local name=$1 t0=$SECONDS rc
  shift
  printf '== %-22s ' "$name"
  # Each step runs in its own process group (set -m), so the watchdog can stop all of it
  # (nvcc, compute-sanitizer, python) when it outlives its time; shell functions cannot run under
  # timeout(1).
  set -m
  ("$@") >"$out/$name.log" 2>&1 &
  local pid=$!
  (sleep "$step_timeout" && echo "gpu-check: step $name stopped after $step_timeout s" \
    >>"$out/$name.log" && kill -TERM -- -"$pid" && sleep 10 && kill -KILL -- -"$pid") \
    >/dev/null 2>&1 &
  local watchdog=$!
  set +m
  wait "$pid"
  rc=$?
  kill -TERM -- -"$watchdog" 2>/dev/null
  wait "$watchdog" 2>/dev/null
  names+=("$name") durations+=($((SECONDS - t0)))
  if [ $rc -eq 0 ]; then results+=(ok); else results+=("FAILED (exit $rc)"); fi
  printf '%s in %ds (log: %s)\n' "${results[-1]}" $((SECONDS - t0)) "$out/$name.log"
  [ $rc -eq 0 ] || tail -n 15 "$out/$name.log" | sed 's/^/   | /'
  summary >/dev/null
  return 0
}

summary() {
  {
    echo "# gpu-check on ${gpu:-no GPU}"
    echo
    echo "driver ${driver:-none}, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, part $part, total $((SECONDS - started)) s"
    echo
    echo "| step | result | seconds |"
    echo "| --- | --- | --- |"
    for i in "${!names[@]}"; do echo "| ${names[$i]} | ${results[$i]} | ${durations[$i]} |"; done
  } >"$out/summary.md"
  publish
  echo
  cat "$out/summary.md"
}

# Copies the results the device tool can bring back (at most 8 files) into $OUT.
publish() {
  [ -n "$publish_dir" ] || return 0
  mkdir -p "$publish_dir"
  local f
  for f in summary.md peers.md peers.json ranking.md ranking.json gpu-tests.xml mpk-tests.xml; do
    [ -f "$out/$f" ] && cp "$out/$f" "$publish_dir/"
  done
  tar -czf "$publish_dir/gpu-check-logs.tar.gz" -C "$root" --exclude='*.so' --exclude='*.o' \
    gpu-out 2>/dev/null
  return 0
}

# ---- the GPU ----
gpu="" driver=""
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
  driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1)
elif ls /proc/driver/nvidia/gpus/*/information >/dev/null 2>&1; then
  gpu=$(grep -h -m1 '^Model:' /proc/driver/nvidia/gpus/*/information | head -n 1 | cut -d: -f2 | xargs)
  driver=$(sed -n 's/.*Kernel Module *\([0-9.]*\).*/\1/p' /proc/driver/nvidia/version | head -n 1)
fi
if [ -z "$gpu" ]; then
  echo "gpu-check: NO GPU on this machine: nvidia-smi finds no NVIDIA GPU and there is no"
  echo "gpu-check: /proc/driver/nvidia. Run \`make gpu-check\` on a machine with an NVIDIA GPU."
  if [ "${GPU_CHECK_WITHOUT_GPU:-0}" != 1 ]; then
    names+=(gpu) results+=("FAILED: no GPU") durations+=(0)
    summary
    exit 1
  fi
  echo "gpu-check: GPU_CHECK_WITHOUT_GPU=1: running the steps anyway (the GPU ones will fail)"
fi
case "$gpu" in
  *H200*) target=h200 ;;
  *A100*) target=a100 ;;
  *) target=h100 ;;
esac
echo "gpu-check: ${gpu:-no GPU} (driver ${driver:-none}), weft target $target, $jobs jobs, logs in $out"

# ---- (a) build ----
# Build dependencies: the machine's own, or the Debian packages carried in .gpu-deps/.
if ls .gpu-deps/*.deb >/dev/null 2>&1; then
  deps_prefix=$(scripts/gpu-deps.sh unpack "$root/$build/deps") || exit 1
  export CMAKE_PREFIX_PATH=$deps_prefix${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  export LD_LIBRARY_PATH=$deps_prefix/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  echo "gpu-check: build dependencies from .gpu-deps, unpacked under $deps_prefix"
fi
build_weft() {
  # No -Werror here: the GPU machine's compiler may warn where CI's does not; CI holds that line.
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DWEFT_WERROR=OFF \
    -DWEFT_BUILD_BENCH=OFF | tee "$out/cmake.txt" || {
    echo "gpu-check: cmake failed; on a machine without fmt, TBB, Z3, GTest, CLI11 and"
    echo "gpu-check: nlohmann-json, run \`make gpu-deps\` where apt works and carry .gpu-deps along"
    return 1
  }
  if ! grep -q "CUDA runtime enabled" "$out/cmake.txt"; then
    echo "gpu-check: cmake did not find the CUDA toolkit: the CUDA backend would be disabled"
    return 1
  fi
  ninja -C "$build" -j"$jobs" weft weft_tests
}
if [ "${GPU_CHECK_SKIP_BUILD:-0}" = 1 ]; then
  echo "gpu-check: GPU_CHECK_SKIP_BUILD=1: using the existing $build"
else
  step build build_weft
fi
if [ ! -x "$weft" ]; then
  echo "gpu-check: no weft binary, nothing else can run"
  summary
  exit 1
fi

# Builds every CUDA library the later steps load, in parallel (nvcc is the slow part of each).
prebuild() {
  [ $# -gt 0 ] || { echo "nothing to build"; return 1; }
  # shellcheck disable=SC2016  # the inner script expands its own variables
  printf '%s\n' "$@" | xargs -P "$jobs" -I{} sh -c \
    'd=$(mktemp -d) && "$0" compile "{}" --target "$1" -o "$d" >"$d/log" 2>&1 || { cat "$d/log"; echo "FAILED: {}"; exit 1; }; tail -n 1 "$d/log"; rm -rf "$d"' \
    "$weft" "$target"
}
small=(tests/golden/lower/*.weft)

# ---- part 1: GPU tests and sanitizers ----
gpu_tests() {
  "$build/weft_tests" --gtest_filter='GpuBackend.*:CudaRuntime.*:CudaCompile.*' \
    --gtest_output="xml:$out/gpu-tests.xml"
  local rc=$?
  if [ -n "$gpu" ] && grep -q '^\[  SKIPPED \] GpuBackend' "$out/gpu-tests.log"; then
    echo
    echo "gpu-check: ERROR: GpuBackend tests were SKIPPED although a GPU ($gpu) is present:"
    grep -A1 'Skipped$' "$out/gpu-tests.log" | grep -v -e '^--$' -e 'Skipped$' | sort -u
    return 1
  fi
  return $rc
}
sanitizer=$(command -v compute-sanitizer)
for s in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
  [ -n "$sanitizer" ] || { [ -x "$s" ] && sanitizer=$s; }
done
sanitize() {
  local tool=$1 f rc=0
  if [ -z "$sanitizer" ]; then
    echo "compute-sanitizer not found (PATH, /usr/local/cuda/bin, /usr/local/cuda/compute-sanitizer)"
    return 1
  fi
  for f in "${small[@]}"; do
    echo "== compute-sanitizer --tool $tool weft run $f --backend cuda"
    "$sanitizer" --tool "$tool" --error-exitcode 97 --target-processes application-only \
      "$weft" run "$f" --backend cuda --target "$target" || { echo "FAILED: $f"; rc=1; }
  done
  return $rc
}
# The committed ONNX transformers compiled for the GPU and run device-resident (issue 15): the
# executor's GPU test (a CUDA graph captured per binding, replayed), then each model compiled with
# a short search, run on the GPU against the CPU path, and benched (graph replays between CUDA
# events) against its per-operator baseline.
model_device() {
  "$build/weft_tests" --gtest_filter='DeviceVm.*Gpu*' --gtest_output="xml:$out/model-device.xml" ||
    return 1
  local m rc=0 d
  for m in bert llama; do
    d="$out/model-device/$m"
    mkdir -p "$d"
    python3 bench/model_inputs.py "$m" 2 16 "$d/inputs.npz" || return 1
    "$weft" compile "examples/onnx/${m}_tiny.onnx" -o "$d/compiled" --target "$target" \
      --bind batch=2,seq=16 --bound seq=64 --time-budget 60 || { rc=1; continue; }
    "$weft" run "$d/compiled" --inputs "$d/inputs.npz" --outputs "$d/cpu.npz" --backend cpu || rc=1
    "$weft" run "$d/compiled" --inputs "$d/inputs.npz" --outputs "$d/gpu.npz" --backend cuda ||
      rc=1
    "$weft" bench "$d/compiled" --inputs "$d/inputs.npz" --backend cuda || rc=1
  done
  return $rc
}
if in_part 1; then
  step prebuild prebuild examples/*.weft "${small[@]}"
  step gpu-tests gpu_tests
  step model-device model_device
  step memcheck sanitize memcheck
  step racecheck sanitize racecheck
fi

# ---- part 2: search, peers, ranking ----
optimize_all() {
  local ex rc=0
  for ex in "${examples[@]}"; do
    "$weft" optimize "examples/$ex.weft" -o "$out/optimize/$ex" --target "$target" \
      --time-budget "$budget" --top-k "$top_k" --quiet || rc=1
    head -n 5 "$out/optimize/$ex/summary.json" 2>/dev/null
  done
  return $rc
}
if in_part 2; then
  step optimize optimize_all
  shopt -s nullglob
  candidates=("$out"/optimize/*/top-*.weft)
  shopt -u nullglob
  step prebuild-candidates prebuild examples/*.weft "${candidates[@]}"
  peer_args=(--weft "$weft" --out "$out" --optimized "$out/optimize" --target "$target"
    --gpu "${gpu:-no GPU}" --driver "${driver:-none}" --reps "$reps")
  step peers python3 bench/gpu_peers.py peers "${peer_args[@]}"
  step ranking python3 bench/gpu_peers.py ranking "${peer_args[@]}"
fi

# ---- parts 3 and 4: the persistent mega-kernel ----
mpk_filter='MpkMegakernelGpu.*:MpkBenchGpu.*:MpkDecodeTasksGpu.*:MpkPerKernelDecodeGpu.*:MpkMegakernel.GpuRefusesWhatCannotBeCoResident'
mpk_tests() {
  "$build/weft_tests" --gtest_filter="$mpk_filter" --gtest_output="xml:$out/mpk-tests.xml"
  local rc=$?
  if [ -n "$gpu" ] && grep -q '^\[  SKIPPED \]' "$out/mpk-tests.log"; then
    echo "gpu-check: ERROR: mega-kernel GPU tests were SKIPPED although a GPU ($gpu) is present"
    return 1
  fi
  return $rc
}
mpk_sanitize() {
  [ -n "$sanitizer" ] || { echo "compute-sanitizer not found"; return 1; }
  "$sanitizer" --tool "$1" --error-exitcode 97 --target-processes application-only \
    "$build/weft_tests" --gtest_filter='MpkMegakernelGpu.*:MpkDecodeTasksGpu.*'
}
# The acceptance figures (docs/benchmarks.md, MPK): the dependent-hop latency of an empty-task
# chain across every worker CTA; per-step time of the per-kernel launches, their CUDA graph and
# the persistent kernel against the weight-bandwidth floor, for the Qwen3-tiny step and the
# Qwen3-0.6B-shaped step; 1,000 iterations in one launch without a hang; 256 decoded tokens of
# the 0.6B step matching the per-kernel path.
mpk_hop() {
  "$build/weft" mpk hop --on gpu --tasks 1000 &&
    "$build/weft" mpk hop --on gpu --tasks 1000 --dispatch jit
}
mpk_bench() {
  "$build/weft" mpk bench examples/qwen3_tiny_decode_step.weft --on gpu &&
    "$build/weft" mpk bench examples/qwen3_tiny_decode_step.weft --on gpu --dispatch aot &&
    "$build/weft" mpk decoder --config qwen3-0.6b --cache 512 -o "$out/qwen3_0_6b.weft" &&
    "$build/weft" mpk bench "$out/qwen3_0_6b.weft" --on gpu --reps 10 --iterations-per-launch 4 &&
    # Narrower projection tiles and more cache splits: more blocks than the preset's 16 for the
    # output and down projections (32) and 32 for attention (64), on 132 SMs.
    "$build/weft" mpk decoder --config qwen3-0.6b --cache 512 --tile 32 --kv-splits 8 \
      -o "$out/qwen3_0_6b_t32.weft" &&
    "$build/weft" mpk bench "$out/qwen3_0_6b_t32.weft" --on gpu --reps 10 --iterations-per-launch 4
}
mpk_soak() {
  "$build/weft" mpk bench examples/qwen3_tiny_decode_step.weft --on gpu --warmup 0 --reps 1 \
    --iterations-per-launch 1000
}
# The decode loop on the device (weights and state resident, the token id back per launch): 256
# tokens one per launch and 64 at 16 per launch, each against the same bodies launched one by one
# with the loop on the device and as a CUDA graph (--no-host-reference: the host-hook path would
# copy every input each step); a traced 4-token decode (Perfetto JSON in the logs); then the host
# loop (one launch per token, the hooks on the host, every input stored per launch) for 16 tokens,
# against the host-hook per-kernel path.
mpk_decode() {
  local f="$out/qwen3_0_6b.weft"
  [ -f "$f" ] || "$build/weft" mpk decoder --config qwen3-0.6b --cache 512 -o "$f" || return 1
  "$build/weft" mpk run "$f" --on gpu --workers 0 --tokens 256 --prompt 1 2 3 \
    --no-host-reference &&
    "$build/weft" mpk run "$f" --on gpu --workers 0 --tokens 64 --prompt 1 2 3 \
      --tokens-per-launch 16 --no-host-reference &&
    "$build/weft" mpk run "$f" --on gpu --workers 0 --tokens 4 --prompt 1 2 3 \
      --tokens-per-launch 2 --no-host-reference --trace "$out/qwen3_0_6b.trace.json" &&
    "$build/weft" mpk run "$f" --on gpu --workers 0 --tokens 16 --prompt 1 2 3 --host-loop
}
if in_part 3; then
  step mpk-tests mpk_tests
  step mpk-racecheck mpk_sanitize racecheck
  step mpk-synccheck mpk_sanitize synccheck
  step mpk-hop mpk_hop
fi
if in_part 4; then
  step mpk-bench mpk_bench
  step mpk-soak mpk_soak
  step mpk-decode-256 mpk_decode
fi

summary
failed=0
for r in "${results[@]}"; do [ "$r" = ok ] || failed=1; done
if [ $failed -ne 0 ]; then
  echo "gpu-check: FAILED (see the logs above); results in $out${publish_dir:+ and $publish_dir}"
  exit 1
fi
echo "gpu-check: part $part passed; results in $out${publish_dir:+ and $publish_dir} (summary.md, peers.md, ranking.md)"
