#!/usr/bin/env python3
"""weft against onnxruntime on the real-models corpus (issue 30), one markdown row per model and
thread count: each model compiled by `weft compile` at its first reference's shape, then timed
interleaved with an onnxruntime session in one process on the reference's inputs, call by call
(load from other work on a shared machine hits both alike), medians after warm-up runs. One
thread pins the process to one core before weft or onnxruntime start (weft's kernels and the CPU
library then see one core; onnxruntime gets one intra-op thread); more threads leave the
process on every core and give onnxruntime that many.

Run with a Python that has numpy and onnxruntime (the test venv) and the built package:
    PYTHONPATH=build/python build/venv/bin/python bench/corpus_peer.py \\
        [--weft build/weft] [--threads 1,2] [--calls 300] [--work DIR] [MODEL ...]
MODEL names a corpus entry (examples/onnx/corpus/models.json; default: every dynamic export).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "onnx",
                      "corpus")


def binding(entry, inputs):
    """--bind for a dynamic export at its reference's shape: batch, and seq for token inputs."""
    if not entry["dynamic"]:
        return None
    first = inputs[entry["inputs"][0]]
    if first.ndim == 2:  # token ids [batch, seq]
        return f"batch={first.shape[0]},seq={first.shape[1]}"
    return f"batch={first.shape[0]}"


def reference_inputs(entry):
    import numpy as np
    with np.load(os.path.join(CORPUS, entry["references"][0]["file"])) as z:
        return {k[len("input."):]: z[k] for k in z.files if k.startswith("input.")}


def compile_model(weft, name, entry, inputs, work):
    out = os.path.join(work, name)
    cmd = [weft, "compile", os.path.join(CORPUS, entry["files"][0]), "-o", out, "--no-cache",
           "--time-budget", "20"]
    if bind := binding(entry, inputs):
        cmd += ["--bind", bind]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    return out


def child(args):
    """Times one compiled directory against onnxruntime in this process; prints one JSON line."""
    if args.threads == 1:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    import numpy as np
    import onnxruntime as ort
    import weft

    entry = json.load(open(os.path.join(CORPUS, "models.json")))["models"][args.model]
    ins = reference_inputs(entry)
    compiled = weft.load_compiled(args.dir)
    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    session = ort.InferenceSession(os.path.join(CORPUS, entry["files"][0]), so,
                                   providers=["CPUExecutionProvider"])
    ours = compiled.run(ins)
    theirs = session.run(None, ins)
    names = [o.name for o in session.get_outputs()]
    worst = 0.0
    for name, want in zip(names, theirs):
        got = np.asarray(ours[name], dtype=np.float64)
        scale = max(1.0, float(np.max(np.abs(want))))
        worst = max(worst, float(np.max(np.abs(got - want))) / scale)
    tw, to = interleaved(compiled, session, ins, args.calls)
    print(json.dumps({"weft_ms": float(np.median(tw)) * 1e3, "ort_ms": float(np.median(to)) * 1e3,
                      "error": worst}))


def interleaved(compiled, session, ins, calls, warmup=20):
    """Seconds of each of `calls` runs of weft's compiled directory and of the onnxruntime
    session, alternating call by call after `warmup` runs of each."""
    for _ in range(warmup):
        compiled.run(ins)
        session.run(None, ins)
    tw, to = [], []
    for _ in range(calls):
        t = time.perf_counter()
        compiled.run(ins)
        tw.append(time.perf_counter() - t)
        t = time.perf_counter()
        session.run(None, ins)
        to.append(time.perf_counter() - t)
    return tw, to


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="*")
    ap.add_argument("--weft", default="build/weft")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--work", help="where the compiled directories go (default: a temporary one)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--dir", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        args.threads = int(args.threads)
        return child(args)
    corpus = json.load(open(os.path.join(CORPUS, "models.json")))["models"]
    names = args.models or [n for n, e in corpus.items() if e["dynamic"] and "_kv_" not in n]
    for n in names:
        if n not in corpus:
            sys.exit(f"{n} is not in {CORPUS}/models.json")
    work = args.work or tempfile.mkdtemp(prefix="weft-corpus-peer-")
    print("| model | threads | weft ms | onnxruntime ms | weft / onnxruntime | output error |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name in names:
        entry = corpus[name]
        directory = compile_model(args.weft, name, entry, reference_inputs(entry), work)
        for threads in [int(t) for t in args.threads.split(",")]:
            proc = subprocess.run(
                [sys.executable, __file__, "--child", "--model", name, "--dir", directory,
                 "--threads", str(threads), "--calls", str(args.calls)],
                capture_output=True, text=True)
            if proc.returncode != 0:
                sys.exit(f"timing {name} at {threads} thread(s) failed:\n{proc.stderr}")
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            print(f"| {name} | {threads} | {r['weft_ms']:.3f} | {r['ort_ms']:.3f} | "
                  f"{r['weft_ms'] / r['ort_ms']:.2f}x | {r['error']:.1e} |", flush=True)


if __name__ == "__main__":
    main()
