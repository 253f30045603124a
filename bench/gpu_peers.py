#!/usr/bin/env python3
"""weft on the GPU against its peers, and the cost model's ranking against measured times.

`gpu_peers.py peers`: for each example, times PyTorch eager, torch.compile, the cuBLAS part alone
(torch.mm / bmm) and scaled_dot_product_attention where it applies, with CUDA events (median of
many runs after warm-up), beside weft's programs timed by `weft bench --backend cuda --json` (the
same method: events around each launch, device-resident inputs) and the roofline floor of
`weft cost --json`. Writes peers.md and peers.json.

`gpu_peers.py ranking`: for each `weft optimize -o DIR` result, measures the top-k candidates
(top-*.weft, predicted times in summary.json) on the GPU and reports the Spearman rank
correlation of predicted vs measured time. Writes ranking.md and ranking.json.

PyTorch is optional: without it the peers columns say so and weft is still measured. Exit status
1 when any weft measurement failed (results are written either way).
"""

import argparse
import datetime
import json
import math
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---- weft ----


def run_weft(weft, args, timeout=600):
    """Runs weft; returns (parsed JSON or None, error text or None)."""
    try:
        p = subprocess.run([weft] + args, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s"
    if p.returncode not in (0, 3):  # 3: outputs differ from --compare, still timed
        tail = (p.stderr or p.stdout).strip().splitlines()[-5:]
        return None, f"exit {p.returncode}: " + " | ".join(tail)
    try:
        return json.loads(p.stdout), None
    except json.JSONDecodeError as e:
        return None, f"unparsable output ({e}): {p.stdout[:200]}"


def weft_bench(weft, path, target, warmup, reps):
    """Times a program on the GPU and checks its outputs against the reference interpreter: a
    program whose outputs differ gets an "error" (its time would mean nothing)."""
    args = ["bench", path, "--backend", "cuda", "--json", "--check", "--warmup", str(warmup),
            "--reps", str(reps)]
    if target:
        args += ["--target", target]
    j, err = run_weft(weft, args)
    if err:
        return {"file": rel(path), "error": err}
    p, check = j["program"], j.get("check", {})
    if not check.get("matches_interpreter", False):
        return {"file": rel(path), "median_us_wrong_output": p["median_us"],
                "error": f"outputs differ from the reference interpreter (scaled error "
                         f"{check.get('scaled_error')} > tolerance {check.get('tolerance')})"}
    return {"file": rel(path), "median_us": p["median_us"], "min_us": p["min_us"],
            "max_us": p["max_us"], "device": j.get("device"), "target": j.get("target"),
            "scaled_error": check.get("scaled_error")}


def weft_cost(weft, path, target):
    j, err = run_weft(weft, ["cost", path, "--json"] + (["--target", target] if target else []))
    if err:
        return {"error": err}
    return {"predicted_us": j["total_us"], "roofline_floor_us": j["roofline"]["floor_us"]}


OUT_DIR = ""  # set by main(): files written there are shown as OUT/...


def rel(path):
    path = os.path.abspath(path)
    if OUT_DIR and path.startswith(OUT_DIR + os.sep):
        return "OUT/" + os.path.relpath(path, OUT_DIR)
    if path.startswith(ROOT + os.sep):
        return os.path.relpath(path, ROOT)
    return path


# ---- PyTorch peers ----


def load_torch():
    try:
        import torch  # noqa: F401
        import torch.nn.functional  # noqa: F401
    except Exception as e:  # ImportError, or a broken install
        return None, f"PyTorch not available ({type(e).__name__}: {e})"
    if not torch.cuda.is_available():
        return None, "PyTorch has no CUDA device"
    return torch, None


def time_cuda(torch, fn, warmup, reps):
    """Median microseconds of fn() between two CUDA events, one synchronized run at a time."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def peer_programs(torch, name, shapes, compile_peer=True):
    """{label: fn} for one example, on random f16 inputs of `shapes` (weft's input shapes);
    torch.compile only when `compile_peer` (it compiles for minutes)."""
    F = torch.nn.functional
    gen = torch.Generator(device="cuda").manual_seed(0)

    def rand(shape):
        return (torch.rand(shape, device="cuda", generator=gen, dtype=torch.float32) * 2 - 1).half()

    def with_compile(fns):
        if compile_peer:
            fns["torch.compile"] = torch.compile(fns["eager"])
        return fns

    if name == "rms_norm_linear":
        X, W = rand(shapes["X"]), rand(shapes["W"])

        def eager():
            return F.rms_norm(X, (X.shape[-1],), eps=1e-6) @ W

        return with_compile({"eager": eager, "cuBLAS only": lambda: torch.mm(X, W)})
    if name == "gated_mlp":
        X, W1, W2 = rand(shapes["X"]), rand(shapes["W1"]), rand(shapes["W2"])

        def eager():
            return F.silu(X @ W1) * (X @ W2)

        return with_compile({"eager": eager,
                             "cuBLAS only": lambda: (torch.mm(X, W1), torch.mm(X, W2))})
    if name == "gqa_attention":
        Q, K, V = rand(shapes["Q"]), rand(shapes["K"]), rand(shapes["V"])

        scale = 1.0 / math.sqrt(shapes["Q"][-1])

        def eager():
            E = torch.exp(torch.bmm(Q, K) * scale)
            return torch.bmm(E / E.sum(dim=2, keepdim=True), V)

        # softmax(Q K / sqrt(D)) V with K given as [B, D, S]: SDPA wants [B, H, S, D] (its default
        # scale is the same 1/sqrt(D); SDPA subtracts the row max, which the program does not).
        Kt = K.transpose(1, 2).contiguous()
        return with_compile({"eager": eager,
                "cuBLAS only": lambda: torch.bmm(torch.bmm(Q, K), V),
                "SDPA": lambda: F.scaled_dot_product_attention(
                    Q.unsqueeze(1), Kt.unsqueeze(1), V.unsqueeze(1), scale=scale)})
    return {}


def input_shapes(path):
    """{name: [dims]} of a .weft file's inputs."""
    shapes = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"\s*input\s+(\w+)\s*:\s*\w+\[([\d,\s]+)\]", line)
            if m:
                shapes[m.group(1)] = [int(d) for d in m.group(2).split(",")]
    return shapes


# ---- peers ----


def variant(src, dst, program_suffix, old, new):
    """A copy of `src` with one input shape changed (e.g. rms_norm_linear at M = 2)."""
    with open(src) as f:
        text = f.read()
    if old not in text:
        raise ValueError(f"{src} has no '{old}'")
    text = text.replace(old, new)
    text = re.sub(r"^program (\w+)", lambda m: f"program {m.group(1)}{program_suffix}", text,
                  count=1, flags=re.M)
    with open(dst, "w") as f:
        f.write(text)
    return dst


def peer_cases(out):
    """(name, label, input program, [weft µGraphs]) for every measured configuration."""
    ex = os.path.join(ROOT, "examples")
    vdir = os.path.join(out, "variants")
    os.makedirs(vdir, exist_ok=True)
    m2 = [variant(os.path.join(ex, f"rms_norm_linear{s}.weft"),
                  os.path.join(vdir, f"rms_norm_linear_m2{s}.weft"), "_m2",
                  "X: f16[16, 4096]", "X: f16[2, 4096]") for s in ("", ".fused")]
    return [
        ("rms_norm_linear", "2x4096 · 4096x6144", m2[0], [m2[1]]),
        ("rms_norm_linear", "16x4096 · 4096x6144", os.path.join(ex, "rms_norm_linear.weft"),
         [os.path.join(ex, "rms_norm_linear.fused.weft")]),
        ("gated_mlp", "8x4096 · 2 x 4096x4096", os.path.join(ex, "gated_mlp.weft"),
         [os.path.join(ex, "gated_mlp.fused.weft")]),
        ("gqa_attention", "2 x (256x64 · 64x4096 · 4096x64)", os.path.join(ex, "gqa_attention.weft"),
         [os.path.join(ex, "gqa_attention.fused.weft")]),
    ]


def fmt_us(v):
    return "—" if v is None else f"{v:.1f}"


def run_peers(a, header):
    torch, why_not = load_torch()
    results, failed = [], False
    for name, shape, program, fused in peer_cases(a.out):
        print(f"== {name} {shape}", flush=True)
        opt_best = os.path.join(a.optimized, name, "best.weft") if a.optimized else None
        candidates = list(fused)
        # `weft optimize` results are for the example's own shapes only.
        if opt_best and os.path.exists(opt_best) and program.startswith(os.path.join(ROOT, "examples")):
            candidates.append(opt_best)
        row = {"example": name, "shape": shape, "input_program": rel(program)}
        row.update(weft_cost(a.weft, program, a.target))
        row["weft_input_program"] = weft_bench(a.weft, program, a.target, a.warmup, a.reps)
        row["weft_ugraphs"] = [dict(weft_bench(a.weft, c, a.target, a.warmup, a.reps),
                                    **{k: v for k, v in weft_cost(a.weft, c, a.target).items()
                                       if k == "predicted_us"}) for c in candidates]
        for m in [row["weft_input_program"]] + row["weft_ugraphs"]:
            if "error" in m:
                failed = True
                print(f"  weft {m['file']}: FAILED: {m['error']}", flush=True)
            else:
                print(f"  weft {m['file']}: {m['median_us']:.1f} us", flush=True)
        ok = [m for m in row["weft_ugraphs"] if "median_us" in m]
        row["weft_best"] = min(ok, key=lambda m: m["median_us"]) if ok else None
        row["peers"] = {}
        if torch is None:
            row["peers_error"] = why_not
        else:
            try:
                for label, fn in peer_programs(torch, name, input_shapes(program),
                                               not a.no_compile).items():
                    row["peers"][label] = round(time_cuda(torch, fn, a.warmup, a.reps), 2)
                    print(f"  {label}: {row['peers'][label]:.1f} us", flush=True)
            except Exception as e:  # report, keep the weft figures
                row["peers_error"] = f"{type(e).__name__}: {e}"
                print(f"  peers FAILED: {row['peers_error']}", flush=True)
        results.append(row)

    doc = dict(header, torch=torch.__version__ if torch else None, peers_note=why_not,
               method=f"CUDA events around each run, median of {a.reps} after {a.warmup} warm-up; "
                      "inputs resident on the device; L2 not flushed", results=results)
    with open(os.path.join(a.out, "peers.json"), "w") as f:
        json.dump(doc, f, indent=2)
    labels = ["eager", "torch.compile", "cuBLAS only", "SDPA"]
    lines = [f"# weft vs peers on {header['gpu']}", "",
             f"Driver {header['driver']}, {header['date']}, PyTorch "
             f"{doc['torch'] or 'not available'}; {doc['method']}. Times in µs.", ""]
    if why_not:
        lines += [f"**Peers not timed: {why_not}.**", ""]
    lines += ["| example | shape | roofline floor | " + " | ".join(labels) +
              " | weft input program | weft best µGraph | best / floor | best vs eager | "
              "best vs compile |",
              "|" + " --- |" * (len(labels) + 8)]
    for r in results:
        best = r["weft_best"]
        b = best["median_us"] if best else None
        floor = r.get("roofline_floor_us")
        p = r["peers"]

        def ratio(x, y):
            return f"{x / y:.2f}x" if x and y else "—"

        lines.append(
            f"| {r['example']} | {r['shape']} | {fmt_us(floor)} | " +
            " | ".join(fmt_us(p.get(l)) for l in labels) +
            f" | {fmt_us(r['weft_input_program'].get('median_us'))} | "
            f"{fmt_us(b)}{' (' + best['file'] + ')' if best else ''} | {ratio(b, floor)} | "
            f"{ratio(p.get('eager'), b)} | {ratio(p.get('torch.compile'), b)} |")
    errors = [(r["example"], m) for r in results
              for m in [r["weft_input_program"]] + r["weft_ugraphs"] if "error" in m]
    if errors:
        lines += ["", "Failed weft measurements:", ""]
        lines += [f"- {e}: `{m['file']}`: {m['error']}" for e, m in errors]
    with open(os.path.join(a.out, "peers.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 1 if failed else 0


# ---- ranking ----


def average_ranks(xs):
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    ranks = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman(xs, ys):
    """Spearman's rho (Pearson correlation of average ranks); None below 3 points or no spread."""
    if len(xs) < 3:
        return None
    rx, ry = average_ranks(xs), average_ranks(ys)
    mx, my = statistics.mean(rx), statistics.mean(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def run_ranking(a, header):
    results, failed = [], False
    for name in sorted(os.listdir(a.optimized)) if os.path.isdir(a.optimized) else []:
        summary_path = os.path.join(a.optimized, name, "summary.json")
        if not os.path.exists(summary_path):
            continue
        with open(summary_path) as f:
            summary = json.load(f)
        print(f"== {name}: {len(summary.get('top', []))} candidates", flush=True)
        cands = []
        for c in summary.get("top", []):
            m = weft_bench(a.weft, os.path.join(a.optimized, name, c["file"]), a.target,
                           a.warmup, a.reps)
            m["predicted_us"] = c["predicted_us"]
            if "error" in m:
                failed = True
                print(f"  {c['file']}: predicted {c['predicted_us']:.1f} us, FAILED: {m['error']}")
            else:
                print(f"  {c['file']}: predicted {c['predicted_us']:.1f} us, measured "
                      f"{m['median_us']:.1f} us", flush=True)
            cands.append(m)
        ok = [c for c in cands if "median_us" in c]
        rho = spearman([c["predicted_us"] for c in ok], [c["median_us"] for c in ok])
        results.append({"example": name, "input_predicted_us": summary.get("input_predicted_us"),
                        "candidates": cands, "measured": len(ok), "spearman": rho})
    rhos = [r["spearman"] for r in results if r["spearman"] is not None]
    doc = dict(header, results=results,
               mean_spearman=statistics.mean(rhos) if rhos else None)
    with open(os.path.join(a.out, "ranking.json"), "w") as f:
        json.dump(doc, f, indent=2)
    lines = [f"# Cost model vs measured time on {header['gpu']}", "",
             f"Driver {header['driver']}, {header['date']}. Top-k verified µGraphs of "
             f"`weft optimize`, each timed by `weft bench --backend cuda --check` (median of "
             f"{a.reps}; a candidate whose outputs differ from the reference interpreter is "
             f"counted as failed and left out of ρ).", "",
             "| example | candidates measured | Spearman ρ (predicted vs measured) | "
             "best predicted → measured | fastest measured |", "| --- | --- | --- | --- | --- |"]
    if not results:
        lines.append(f"| (no `weft optimize` results under {a.optimized}) | | | | |")
        failed = True
    for r in results:
        ok = [c for c in r["candidates"] if "median_us" in c]
        first = r["candidates"][0] if r["candidates"] else None
        fastest = min(ok, key=lambda c: c["median_us"]) if ok else None
        rho = "— (fewer than 3 measured)" if r["spearman"] is None else f"{r['spearman']:.2f}"
        top = (f"{first['file']}: {first['predicted_us']:.1f} → {fmt_us(first.get('median_us'))} µs"
               if first else "—")
        quickest = f"{fastest['file']}: {fastest['median_us']:.1f} µs" if fastest else "—"
        lines.append(f"| {r['example']} | {r['measured']} / {len(r['candidates'])} | {rho} | "
                     f"{top} | {quickest} |")
    if rhos:
        lines += ["", f"Mean ρ over {len(rhos)} example(s): {doc['mean_spearman']:.2f}."]
    with open(os.path.join(a.out, "ranking.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("section", choices=["peers", "ranking"])
    ap.add_argument("--weft", default=os.path.join(ROOT, "build-gpu", "weft"))
    ap.add_argument("--out", default=os.environ.get("OUT", os.path.join(ROOT, "gpu-out")))
    ap.add_argument("--optimized", default="",
                    help="directory of `weft optimize -o DIR/EXAMPLE` results")
    ap.add_argument("--target", default="", help="weft GPU target (default: the device's)")
    ap.add_argument("--gpu", default="unknown GPU")
    ap.add_argument("--driver", default="unknown")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--no-compile", action="store_true",
                    help="leave torch.compile out (it takes minutes; make gpu-check's quick part)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    global OUT_DIR
    OUT_DIR = os.path.abspath(a.out)
    header = {"gpu": a.gpu, "driver": a.driver,
              "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    sys.exit(run_peers(a, header) if a.section == "peers" else run_ranking(a, header))


if __name__ == "__main__":
    main()
