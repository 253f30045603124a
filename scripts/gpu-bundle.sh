#!/usr/bin/env bash
# `make gpu-bundle`: weft and the test binary, built here (nvcc is here, the GPU machine's minutes
# are not for compiling weft), with every shared library they need beside them, so that a GPU
# machine without a package registry runs them as they are:
#
#   .gpu-bundle/bin/weft, bin/weft_tests   debug info stripped, RUNPATH $ORIGIN/../lib; weft_tests
#                                          gzipped (bin/weft_tests.gz, 16 MiB -> 5), unpacked
#                                          like the libraries
#   .gpu-bundle/lib/*.so*                  each with RUNPATH $ORIGIN; those over 16 MiB (oneDNN,
#                                          Z3) gzipped as lib/NAME.gz, unpacked where the bundle
#                                          runs (`unpack DIR`, which gpu-check.sh calls)
#   .gpu-bundle/MANIFEST                   the commit, the files and their sizes
#
# The libraries are the binaries' dependency closure (ldd) less what every Linux machine has
# (libc, libm, libstdc++, libgcc_s, the dynamic loader, ...) and the CUDA driver (libcuda, which
# comes with the GPU). Nothing in the binaries needs the checkout's path at run time: the tests
# read $WEFT_SOURCE_DIR and $WEFT_BINARY. Carry it with run(carry=[".gpu-bundle"]); scripts/
# gpu-check.sh uses it when it is there. `check DIR` verifies a bundle (scripts/gpu-rehearse.sh).
#
# Usage: scripts/gpu-bundle.sh [BUILD_DIR]   (default build; the binaries must be built)
#        scripts/gpu-bundle.sh check [DIR]   (default .gpu-bundle)
#        scripts/gpu-bundle.sh unpack [DIR]  (default .gpu-bundle)
set -euo pipefail
cd "$(dirname "$0")/.."
limit_mib=60
pack_mib=16

# The gzipped files of DIR unpacked beside their .gz (each once); prints what it unpacked.
unpack() {
  local z
  for z in "$1"/lib/*.gz "$1"/bin/*.gz; do
    [ -e "$z" ] || continue
    [ -f "${z%.gz}" ] && continue
    gunzip -k "$z"
    echo "${z%.gz}"
  done
}

# The bytes DIR carries: its files less the unpacked copies of gzipped libraries.
carried_bytes() {
  local total=0 f
  while IFS= read -r f; do
    [ -f "$f.gz" ] && continue
    total=$((total + $(stat -c %s "$f")))
  done < <(find "$1" -type f)
  echo "$total"
}

# Libraries a bundle may leave to the machine it runs on.
system_library() {
  case "$(basename "$1")" in
    libc.so* | libm.so* | libstdc++.so* | libgcc_s.so* | ld-linux*.so* | libdl.so* | \
      libpthread.so* | librt.so* | libutil.so* | libresolv.so* | linux-vdso.so* | libcuda.so*)
      return 0 ;;
  esac
  return 1
}

# check DIR: every binary and library of the bundle resolves its libraries inside it or to the
# system's allowed set, with no help from LD_LIBRARY_PATH; the bundle fits the limit.
check() {
  local dir=$1 bad=0 f line name path
  [ -x "$dir/bin/weft" ] && { [ -x "$dir/bin/weft_tests" ] || [ -f "$dir/bin/weft_tests.gz" ]; } || {
    echo "gpu-bundle: $dir has no bin/weft or bin/weft_tests (run make gpu-bundle)" >&2
    return 1
  }
  local real mib unpacked
  real=$(cd "$dir" && pwd -P)
  mib=$(( $(carried_bytes "$dir") / 1048576 ))
  # Checked unpacked, as the GPU machine runs it; the copies go again, so the bundle stays small.
  unpacked=$(unpack "$dir")
  for f in "$dir"/bin/* "$dir"/lib/*; do
    [[ $f == *.gz ]] && continue
    while IFS= read -r line; do
      if [[ $line == *"not found"* ]]; then
        echo "gpu-bundle: $f: ${line// /} (missing from the bundle)" >&2
        bad=1
        continue
      fi
      [[ $line == *"=>"* ]] || continue
      name=$(awk '{print $1}' <<<"$line")
      path=$(awk '{print $3}' <<<"$line")
      system_library "$name" && continue
      case "$(realpath "$path")" in
        "$real"/*) ;;
        *)
          echo "gpu-bundle: $f needs $name, which resolves outside the bundle ($path)" >&2
          bad=1
          ;;
      esac
    done < <(env -u LD_LIBRARY_PATH ldd "$f" 2>&1)
  done
  if [ "$mib" -gt "$limit_mib" ]; then
    echo "gpu-bundle: $dir is $mib MiB, over the $limit_mib MiB limit" >&2
    bad=1
  fi
  # The device tool carries the checkout's tracked files with the bundle, 64 MiB in all.
  local tree_mib
  tree_mib=$(( $(git ls-files -z 2>/dev/null | xargs -0 -r stat -c %s 2>/dev/null |
    awk '{s += $1} END {print s + 0}') / 1048576 ))
  if [ $((tree_mib + mib)) -ge 64 ]; then
    echo "gpu-bundle: the checkout's tracked files ($tree_mib MiB) and $dir ($mib MiB) exceed the" \
      "64 MiB the device tool carries" >&2
    bad=1
  fi
  if ! env -u LD_LIBRARY_PATH "$dir/bin/weft" --version >/dev/null 2>&1; then
    echo "gpu-bundle: $dir/bin/weft --version does not run" >&2
    bad=1
  fi
  # shellcheck disable=SC2086  # one path per line, none with spaces (the bundle's own names)
  [ -z "$unpacked" ] || rm -f $unpacked
  [ $bad -eq 0 ] && echo "gpu-bundle: $dir checked: $mib MiB (with the checkout $((tree_mib + mib)) of" \
    "the 64 MiB carried), every library inside it or the system's"
  return $bad
}

if [ "${1:-}" = check ]; then
  check "${2:-.gpu-bundle}"
  exit
fi
if [ "${1:-}" = unpack ]; then
  unpack "${2:-.gpu-bundle}" >/dev/null
  exit
fi

build=${1:-build}
dest=.gpu-bundle
for b in weft weft_tests; do
  [ -x "$build/$b" ] || { echo "gpu-bundle: $build/$b is not built (make build)" >&2; exit 1; }
done
command -v patchelf >/dev/null || {
  echo "gpu-bundle: patchelf is missing (scripts/install-deps.sh installs it)" >&2
  exit 1
}
rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib"
for b in weft weft_tests; do
  objcopy --strip-debug "$build/$b" "$dest/bin/$b"
  patchelf --set-rpath '$ORIGIN/../lib' "$dest/bin/$b"
done
gzip -6 "$dest/bin/weft_tests"
# The dependency closure as this machine resolves it.
env -u LD_LIBRARY_PATH ldd "$build/weft" "$build/weft_tests" | awk '/=>/ && $3 ~ /^\// {print $1, $3}' |
  sort -u | while read -r name path; do
  system_library "$name" && continue
  [ -f "$dest/lib/$name" ] && continue
  cp -L "$path" "$dest/lib/$name"
  chmod u+w "$dest/lib/$name"
  strip --strip-debug "$dest/lib/$name" 2>/dev/null || true
  patchelf --set-rpath '$ORIGIN' "$dest/lib/$name"
  if [ "$(stat -c %s "$dest/lib/$name")" -gt $((pack_mib * 1048576)) ]; then
    gzip -6 "$dest/lib/$name"
  fi
done
{
  echo "weft GPU bundle of $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo '+changes'), built $(date -u '+%Y-%m-%d %H:%M UTC') from $build"
  (cd "$dest" && find bin lib -type f -printf '%s\t%p\n' | sort -k2)
} >"$dest/MANIFEST"
check "$dest"
