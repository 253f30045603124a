#!/usr/bin/env bash
# Installs the Debian packages weft builds against (libdnnl-dev: oneDNN, the CPU library
# operators; python3-numpy, the model tests' reference; libonnx-testdata: ONNX's per-operator
# node tests, run against the ONNX importer),
# only those that are missing.
set -euo pipefail
packages=(cmake ninja-build g++ clang clang-format libclang-rt-14-dev ccache pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev libz3-dev
  libtbb-dev nlohmann-json3-dev libcli11-dev libfmt-dev graphviz libopenblas-dev libdnnl-dev
  zlib1g-dev patchelf python3-numpy python3-dev python3-venv python3-pip
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
if [ "$(id -u)" != 0 ]; then
  echo "weft: missing Debian packages: ${missing[*]}" >&2
  echo "weft: run 'sudo scripts/install-deps.sh' (or install them yourself) and retry" >&2
  exit 1
fi
echo "weft: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
