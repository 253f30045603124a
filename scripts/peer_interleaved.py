"""weft against onnxruntime timed interleaved in one process (issue 30): a compiled directory's
`load_compiled(DIR).run` and an onnxruntime session on the same inputs, call by call, so load
from other work on a shared machine hits both alike (`weft bench --peer` times the peer in a
process after weft's runs). Both go through Python; weft's call adds its argument conversion.
Run with the test venv's Python (numpy, onnxruntime) and the built package on the path:
PYTHONPATH=build/python build/venv/bin/python scripts/peer_interleaved.py DIR MODEL.onnx IN.npz
[--threads N] [--calls N]."""
import argparse
import os
import sys

import numpy as np
import onnxruntime as ort

import weft

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from corpus_peer import interleaved  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("model")
    ap.add_argument("inputs")
    ap.add_argument("--threads", type=int, default=2, help="onnxruntime's intra-op threads")
    ap.add_argument("--calls", type=int, default=300)
    args = ap.parse_args()
    with np.load(args.inputs) as z:
        ins = {k: z[k] for k in z.files}
    compiled = weft.load_compiled(args.dir)
    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    session = ort.InferenceSession(args.model, so, providers=["CPUExecutionProvider"])
    tw, to = interleaved(compiled, session, ins, args.calls)
    mw, mo = np.median(tw) * 1e3, np.median(to) * 1e3
    print(f"{args.dir}: weft {mw:.3f} ms (min {min(tw) * 1e3:.3f}), onnxruntime {mo:.3f} ms "
          f"(min {min(to) * 1e3:.3f}), weft / onnxruntime {mw / mo:.2f}")


if __name__ == "__main__":
    main()
