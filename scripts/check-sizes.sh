#!/usr/bin/env bash
# Fails when a source file of a folder in scripts/layers.txt holds over 800 lines or a function
# body over 150, unless scripts/size-exceptions.txt lists it with a reason (scripts/check_sizes.py
# measures; it needs no build). usage: check-sizes.sh [ROOT] (default: this checkout)
set -euo pipefail
root=${1:-"$(cd "$(dirname "$0")/.." && pwd)"}
exec python3 "$root/scripts/check_sizes.py" "$root"
