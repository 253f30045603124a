#!/usr/bin/env python3
"""The model rewrite's two searches side by side (docs/benchmarks.md, issue 31): for each model,
`weft model rewrite MODEL --mode backtrack|egraph` with the same rules and budget, one markdown
row per model and mode: rewrites used, kernels and predicted time before/after, what the search
visited and why it stopped, its search time and the command's wall time.

    bench/rewrite_modes.py [--weft build/weft] [--budget 10] [--bind n=64] MODEL...
"""
import argparse
import re
import subprocess
import sys
import time

LINE = re.compile(
    r"^fn (?P<fn>\S+): (?P<rewrites>\d+) rewrite\(s\).*?, (?P<kb>\d+) -> (?P<ka>\d+) kernels, "
    r"(?P<pb>[\d.]+) -> (?P<pa>[\d.]+) us predicted, (?P<visited>.*?), (?P<stop>complete|converged|"
    r"time budget|state budget|memory budget|interrupted)")
SEARCH = re.compile(r"^rewrite: fn (?P<fn>\S+): \d+ rewrite\(s\), .*?, (?P<s>[\d.]+) s \(")


def run(weft, model, mode, budget, bind):
    cmd = [weft, "model", "rewrite", model, "--mode", mode, "--time-budget", str(budget),
           "-o", "/dev/null"]
    if bind:
        cmd += ["--bind", bind]
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - start
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    rows, searched = [], {}
    for line in proc.stderr.splitlines():
        if m := SEARCH.match(line):
            searched[m["fn"]] = float(m["s"])
        if m := LINE.match(line):
            rows.append(m)
    if not rows:  # the summary line's wording changed: say so rather than print an empty table
        sys.exit(f"{' '.join(cmd)}: no 'fn NAME: N rewrite(s) ...' line in its stderr:\n{proc.stderr}")
    return rows, searched, wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--weft", default="build/weft")
    ap.add_argument("--budget", type=float, default=10)
    ap.add_argument("--bind", default="")
    args = ap.parse_args()
    print("| model | mode | rewrites | kernels | predicted µs | visited (stop) | search s | wall s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for model in args.models:
        name = model.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        for mode in ("backtrack", "egraph"):
            rows, searched, wall = run(args.weft, model, mode, args.budget, args.bind)
            for m in rows:
                fn = "" if m["fn"] == "main" else f" ({m['fn']})"
                print(f"| {name}{fn} | {mode} | {m['rewrites']} | {m['kb']} → {m['ka']} | "
                      f"{float(m['pb']):,.1f} → {float(m['pa']):,.1f} | {m['visited']} "
                      f"({m['stop']}) | {searched.get(m['fn'], 0):.1f} | {wall:.1f} |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
