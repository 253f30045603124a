#!/usr/bin/env bash
# Fails when an #include runs against the layer order of scripts/layers.txt (upward, or between
# two folders of one layer), when a source file lies in no listed folder, or when an allowed
# exception no longer exists. usage: check-layers.sh [ROOT] (default: this checkout)
set -euo pipefail
root=${1:-"$(cd "$(dirname "$0")/.." && pwd)"}
cd "$root"
layers=scripts/layers.txt
[ -f "$layers" ] || { echo "check-layers: no $root/$layers" >&2; exit 2; }

# The C++ sources: tracked and new (not ignored) files in a git checkout; elsewhere every file
# outside hidden folders and build trees (folders holding a CMakeCache.txt).
pattern='\.(h|hpp|cpp|cc|cu|cuh|def|inc)$'
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  files=$(git ls-files --cached --others --exclude-standard | grep -E "$pattern" || true)
else
  files=$(find . -mindepth 1 -type d \( -name '.*' -o -exec test -e '{}/CMakeCache.txt' \; \) -prune \
            -o -type f -print | sed 's#^\./##' | grep -E "$pattern" || true)
fi
[ -n "$files" ] || { echo "check-layers: no source files under $root" >&2; exit 2; }

{
  for f in $files; do
    [ -f "$f" ] || continue  # deleted in the work tree, not yet in the index
    echo "F $f"
    # "#include "x"" lines as: I file line included
    { grep -n -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" || true; } |
      sed -E 's/^([0-9]+):[^"]*"([^"]*)".*/\1 \2/' | while read -r line inc; do
        echo "I $f $line $inc"
      done
  done
} | awk -v layers="$layers" '
  function folder_of(path,    best, f) {  # the longest listed folder holding path, "" if none
    best = ""
    for (f in level)
      if (index(path, f "/") == 1 && length(f) > length(best)) best = f
    return best
  }
  BEGIN {
    n = 0
    while ((getline raw < layers) > 0) {
      sub(/#.*/, "", raw)
      if (split(raw, w) == 0) continue
      if (w[1] == "allow") { allowed[w[2] " " w[3]] = 1; continue }
      ++n
      for (i = 2; i <= split(raw, w); ++i) level[w[i]] = n
    }
    bad = 0
  }
  $1 == "F" {
    if (folder_of($2) == "") {
      printf "%s: in no layer of %s (add its folder there)\n", $2, layers
      bad = 1
    }
    next
  }
  $1 == "I" {
    file = $2; line = $3; inc = $4
    from = folder_of(file); to = folder_of(inc)
    if (from == "" || to == "" || from == to || level[to] < level[from]) next
    if ((file " " inc) in allowed) { used[file " " inc] = 1; next }
    if (level[to] > level[from])
      why = to " is a later layer than " from
    else
      why = to " and " from " are independent folders of one layer"
    printf "%s:%s: includes %s: %s (%s)\n", file, line, inc, why, layers
    bad = 1
  }
  END {
    for (a in allowed)
      if (!(a in used)) {
        printf "%s: the allowed include \"%s\" is gone: delete its allow line\n", layers, a
        bad = 1
      }
    if (bad) exit 1
  }
'
