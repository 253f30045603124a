#!/usr/bin/env bash
# The build dependencies weft needs on a GPU machine that has no package registry, for the fallback
# build there (the prepared binaries of `make gpu-bundle` are the first choice): `fetch` (run on a
# machine with apt, `make gpu-deps`) downloads the Debian packages into .gpu-deps/ (git-ignored,
# about 12 MB, carried along to the GPU machine); `unpack DIR` (run there by scripts/gpu-check.sh)
# extracts them under DIR without installing anything, turns the packages' absolute symbolic links
# (libz.so -> /lib/x86_64-linux-gnu/libz.so.1.2.13) into links inside DIR, and prints the
# CMAKE_PREFIX_PATH to use. scripts/gpu-rehearse.sh configures a build from them alone.
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(libz3-dev libz3-4 libtbb-dev libtbb12 libtbbmalloc2 libtbbbind-2-5 libhwloc15
  libfmt-dev libfmt9 libgtest-dev libgmock-dev googletest libcli11-dev nlohmann-json3-dev
  zlib1g-dev zlib1g libonnx-dev libonnx1 libonnxifi libprotobuf-dev libprotobuf32
  libprotobuf-lite32)
dir=${GPU_DEPS_DIR:-.gpu-deps}  # another folder of packages (gpu-rehearse's negative control)

case "${1:-}" in
  fetch)
    command -v apt-get >/dev/null || { echo "gpu-deps: fetch needs apt-get" >&2; exit 1; }
    mkdir -p "$dir"
    rm -f "$dir"/*.deb
    # apt-get download writes into the current directory.
    (cd "$dir" && apt-get download -qq "${packages[@]}" 2>&1 | grep -v 'unsandboxed' >&2 || true)
    n=$(find "$dir" -maxdepth 1 -name '*.deb' | wc -l)
    if [ "$n" -ne ${#packages[@]} ]; then
      echo "gpu-deps: expected ${#packages[@]} packages in $dir, got $n" >&2
      exit 1
    fi
    echo "gpu-deps: $n packages ($(du -sh "$dir" | cut -f1)) in $dir; carry '$dir' to the GPU machine"
    ;;
  unpack)
    dest=${2:?usage: gpu-deps.sh unpack DIR}
    shopt -s nullglob
    debs=("$dir"/*.deb)
    [ ${#debs[@]} -gt 0 ] || { echo "gpu-deps: no packages in $dir (run make gpu-deps)" >&2; exit 1; }
    mkdir -p "$dest"
    dest=$(cd "$dest" && pwd)
    for deb in "${debs[@]}"; do
      if command -v dpkg-deb >/dev/null; then
        dpkg-deb -x "$deb" "$dest"
      else
        # Without dpkg: a .deb is an ar archive holding data.tar.*.
        tmp=$(mktemp -d)
        abs=$(realpath "$deb")
        (cd "$tmp" && ar x "$abs" && tar -xf data.tar.* -C "$dest")
        rm -rf "$tmp"
      fi
    done
    # Absolute links point into the machine they were packaged for: point them inside DIR.
    root=$dest
    find "$root" -type l | while read -r link; do
      target=$(readlink "$link")
      case "$target" in
        /*)
          if [ -e "$root$target" ]; then
            ln -sfn "$(realpath --relative-to="$(dirname "$link")" "$root$target")" "$link"
          else
            echo "gpu-deps: $link points to $target, which no carried package holds" >&2
          fi
          ;;
      esac
    done
    echo "$root/usr"
    ;;
  *)
    echo "usage: scripts/gpu-deps.sh fetch | unpack DIR" >&2
    exit 2
    ;;
esac
