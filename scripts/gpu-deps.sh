#!/usr/bin/env bash
# The build dependencies weft needs on a GPU machine that has no package registry: `fetch` (run on
# a machine with apt, `make gpu-deps`) downloads the Debian packages into .gpu-deps/ (git-ignored,
# about 9 MB, carried along to the GPU machine); `unpack DIR` (run there by scripts/gpu-check.sh)
# extracts them under DIR without installing anything, and prints the CMAKE_PREFIX_PATH to use.
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(libz3-dev libz3-4 libtbb-dev libtbb12 libtbbmalloc2 libtbbbind-2-5 libhwloc15
  libfmt-dev libfmt9 libgtest-dev libgmock-dev googletest libcli11-dev nlohmann-json3-dev)
dir=.gpu-deps

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
    for deb in "${debs[@]}"; do
      if command -v dpkg-deb >/dev/null; then
        dpkg-deb -x "$deb" "$dest"
      else
        # Without dpkg: a .deb is an ar archive holding data.tar.*.
        tmp=$(mktemp -d)
        (cd "$tmp" && ar x "$OLDPWD/$deb" && tar -xf data.tar.* -C "$dest")
        rm -rf "$tmp"
      fi
    done
    echo "$(cd "$dest" && pwd)/usr"
    ;;
  *)
    echo "usage: scripts/gpu-deps.sh fetch | unpack DIR" >&2
    exit 2
    ;;
esac
