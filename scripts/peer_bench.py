"""weft against onnxruntime on the exporter corpus (issue 30): each dynamic model compiled at its
first reference's shapes (batch 1), then `weft bench DIR --peer onnxruntime` on those inputs, and a
Markdown table of the medians and ratios. Run with the test venv's Python, which has numpy and
onnxruntime: build/venv/bin/python scripts/peer_bench.py [--weft build/weft] [--budget S]
[--threads N] [--only NAME,...]."""
import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import onnx_harness  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT / "examples" / "onnx" / "corpus"


def ms(pattern, text):
    m = re.search(pattern, text)
    return float(m.group(1)) if m else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", default=str(ROOT / "build" / "weft"))
    ap.add_argument("--budget", default="20")
    ap.add_argument("--threads", type=int, default=0, help="weft's and onnxruntime's (0: the cores)")
    ap.add_argument("--reps", default="10")
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    models = json.loads((CORPUS / "models.json").read_text())["models"]
    names = [n for n, e in models.items() if e["dynamic"] and not n.startswith("llama_kv")
             and not n.endswith("_external")]
    if args.only:
        names = [n for n in names if n in args.only.split(",")]
    env = dict(os.environ, WEFT_PYTHON=sys.executable)
    print("| model | shapes | weft per-operator (ms) | weft compiled (ms) | onnxruntime (ms) | compiled / onnxruntime |")
    print("| --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        for name in names:
            entry = models[name]
            ref = entry["references"][0]
            with np.load(CORPUS / ref["file"]) as z:
                ins = {k[len("input."):]: z[k] for k in z.files if k.startswith("input.")}
            np.savez(tmp / "in.npz", **ins)
            path = CORPUS / f"{name}.onnx"
            out_dir = tmp / name
            r = subprocess.run([args.weft, "compile", str(path), "-o", str(out_dir), "--time-budget",
                                args.budget, "--no-cache", "--bind", onnx_harness.dims_binding(path, ins)],
                               capture_output=True, text=True, env=env)
            if r.returncode != 0:
                print(f"| {name} | {ref['shape']} | compile failed: {r.stderr.strip().splitlines()[-1]} | | | |")
                continue
            r = subprocess.run([args.weft, "bench", str(out_dir), "--inputs", str(tmp / "in.npz"), "--peer",
                                "onnxruntime", "--threads", str(args.threads), "--reps", args.reps],
                               capture_output=True, text=True, env=env)
            text = r.stdout + r.stderr
            per_op = ms(r"per-operator CPU kernels\s+([\d.]+) ms", text)
            compiled = ms(r"compiled \(superoptimized regions\)\s+([\d.]+) ms", text)
            peer = ms(r"peer: onnxruntime .*?\)\s+([\d.]+) ms", text)
            threads = re.search(r"peer: onnxruntime ([\d.]+) \(CPU, (\d+) thread", text)
            if None in (per_op, compiled, peer):
                print(f"| {name} | {ref['shape']} | bench failed: {text.strip().splitlines()[-1]} | | | |")
                continue
            print(f"| {name} | {ref['shape']} | {per_op:.3f} | {compiled:.3f} | {peer:.3f} | "
                  f"{compiled / peer:.1f}x |", flush=True)
    if threads:
        print(f"\nonnxruntime {threads.group(1)}, {threads.group(2)} intra-op thread(s); weft's CPU kernels "
              f"(oneTBB) and oneDNN on as many; medians of {args.reps} after 1 warm-up; compile budget "
              f"{args.budget} s.")


if __name__ == "__main__":
    main()
