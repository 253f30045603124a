"""Greedy decoding of the corpus decoder exported with its KV cache (issue 32): `weft decode DIR`
on the VM (growing cache, and a fixed capacity at the compiled binding) and, with --megakernel,
one persistent launch a step (host emulation here: not a speed figure), beside onnxruntime's own
loop on the same model, prompt and thread count (the cache fed back as onnxruntime's greedy
reference does). Prints a Markdown table of median step times and ratios, and checks that every
path chose onnxruntime's tokens.

Run with the test venv's Python (numpy, onnxruntime):
  build/venv/bin/python bench/decode_peer.py [--weft build/weft] [--model llama_kv_classic_dynamic]
      [--tokens 32] [--threads 1] [--megakernel] [--budget 5]
"""
import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT / "examples" / "onnx" / "corpus"


def onnxruntime_decode(model, prompt, tokens, threads):
    """onnxruntime's greedy loop: the prompt in one step with an empty cache, then a token a step
    with present.* fed back as past_key_values.*; the tokens and each step's seconds."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    pasts = [i.name for i in session.get_inputs() if i.name.startswith("past_key_values.")]
    shape = next(i.shape for i in session.get_inputs() if i.name == pasts[0])
    heads, dim = shape[1], shape[3]
    feeds = {"input_ids": prompt[None], "attention_mask": np.ones((1, len(prompt)), np.int64),
             "position_ids": np.arange(len(prompt), dtype=np.int64)[None],
             **{p: np.zeros((1, heads, 0, dim), np.float32) for p in pasts}}
    chosen, seconds = [], []
    for step in range(tokens):
        t0 = time.perf_counter()
        out = dict(zip(names, session.run(None, feeds)))
        token = int(out["logits"][0, -1].argmax())
        seconds.append(time.perf_counter() - t0)
        chosen.append(token)
        past = len(prompt) + step
        feeds = {"input_ids": np.array([[token]], np.int64),
                 "attention_mask": np.ones((1, past + 1), np.int64),
                 "position_ids": np.array([[past]], np.int64),
                 **{p: out[p.replace("past_key_values.", "present.")] for p in pasts}}
    return chosen, seconds


def weft_decode(weft, directory, prompt, tokens, threads, extra):
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "decode.json"
        cmd = [weft, "decode", str(directory), "--prompt", ",".join(map(str, prompt)), "--tokens",
               str(tokens), "--threads", str(threads), "--json", str(out), *extra]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr}")
        return json.loads(out.read_text())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", default=str(ROOT / "build" / "weft"))
    ap.add_argument("--model", default="llama_kv_classic_dynamic")
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--budget", type=float, default=5, help="weft compile --time-budget")
    ap.add_argument("--megakernel", action="store_true",
                    help="also one persistent launch a step (host emulation: slow, not a speed figure)")
    args = ap.parse_args()
    model = CORPUS / f"{args.model}.onnx"
    with np.load(CORPUS / f"{args.model}.greedy.npz") as z:
        prompt = z["prompt"].astype(np.int64)
    capacity = len(prompt) + args.tokens - 2
    mask = "s53" if "dynamo" in args.model else "total_seq"
    want, ort_seconds = onnxruntime_decode(model, prompt, args.tokens, args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        directory = pathlib.Path(tmp) / "dir"
        compile_cmd = [args.weft, "compile", str(model), "-o", str(directory), "--bind",
                       f"batch=1,seq=1,past_seq={capacity},{mask}={capacity + 1}", "--bound",
                       "batch=4", "--bound", "past_seq=64", "--bound", "seq=64", "--bound",
                       f"{mask}=64", "--target", "h100", "--time-budget", str(args.budget)]
        if args.megakernel:
            compile_cmd.append("--megakernel")
        r = subprocess.run(compile_cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"{' '.join(compile_cmd)}: exit {r.returncode}\n{r.stderr}")
        runs = {"weft VM, growing cache": weft_decode(args.weft, directory, prompt, args.tokens,
                                                       args.threads, []),
                f"weft VM, {capacity} slots (compiled binding)":
                    weft_decode(args.weft, directory, prompt, args.tokens, args.threads,
                                ["--capacity", str(capacity)])}
        if args.megakernel:
            runs["weft persistent kernel, emulation"] = weft_decode(
                args.weft, directory, prompt, args.tokens, args.threads, ["--megakernel"])
    ort_median = statistics.median(ort_seconds)
    print(f"{args.model}, prompt {len(prompt)}, {args.tokens} tokens, {args.threads} thread(s)\n")
    print("| path | steps | median step | vs onnxruntime | tokens |")
    print("| --- | --- | --- | --- | --- |")
    print(f"| onnxruntime | {len(ort_seconds)} | {ort_median * 1e3:.3f} ms | 1.00x | reference |")
    ok = True
    for name, r in runs.items():
        same = r["tokens"] == want
        ok &= same
        print(f"| {name} | {len(r['step_seconds'])} | {r['median_step_seconds'] * 1e3:.3f} ms | "
              f"{r['median_step_seconds'] / ort_median:.2f}x | "
              f"{'equal' if same else 'DIFFER'} |")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
