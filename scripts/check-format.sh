#!/usr/bin/env bash
# Fails when a C++ or CUDA source (.h .cpp .cu .cuh, tracked or new) differs from what clang-format
# makes of it with the repository's .clang-format; names every such file and the command that
# fixes them (`make format`). usage: check-format.sh [ROOT] (default: this checkout)
set -euo pipefail
root=${1:-"$(cd "$(dirname "$0")/.." && pwd)"}
cd "$root"
command -v clang-format >/dev/null || { echo "check-format: clang-format not found (scripts/install-deps.sh installs it)" >&2; exit 2; }
[ -f .clang-format ] || { echo "check-format: no $root/.clang-format" >&2; exit 2; }
files=$(git ls-files --cached --others --exclude-standard -- '*.h' '*.cpp' '*.cu' '*.cuh')
[ -n "$files" ] || { echo "check-format: no source files under $root" >&2; exit 2; }
bad=()
for f in $files; do
  [ -f "$f" ] || continue  # deleted in the work tree
  clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  printf '%s: not formatted as .clang-format says\n' "${bad[@]}" >&2
  echo "check-format: ${#bad[@]} file(s); fix with \`make format\` (clang-format -i FILE)" >&2
  exit 1
fi
echo "check-format: $(echo "$files" | wc -l) files formatted"
