#!/usr/bin/env python3
"""NumPy reference for tests/model/new_ops.wmod (slice, where, layer_norm, gelu_tanh, attention):
runs
`weft model run` at several bindings and compares every output.

usage: new_ops_reference.py WEFT_BINARY WORK_DIR
Exit status 0 when every output matches within f32 tolerance, 1 otherwise."""
import math
import subprocess
import sys

import numpy as np


def reference(full, c, y, v, p, n):
    x = full[:, p:p + n]
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    gelu = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    scores = np.einsum("bsd,btd->bst", gelu, full) / 4
    scores = np.where(np.arange(p + n)[None, :] > np.arange(n)[:, None] + p, -np.inf, scores)
    probs = np.exp(scores - scores.max(axis=-1, keepdims=True))
    probs /= probs.sum(axis=-1, keepdims=True)
    att = probs @ v
    return [x, np.where(c != 0, x, y), (x - mean) / np.sqrt(var + 1e-5), gelu, att]


def main():
    weft, work = sys.argv[1], sys.argv[2]
    wmod = __file__.replace("new_ops_reference.py", "new_ops.wmod")
    rng = np.random.default_rng(3)
    failures = []
    for b, n, p in [(1, 5, 0), (2, 4, 3), (3, 17, 16)]:
        x = (2 * rng.standard_normal((b, p + n, 16))).astype(np.float32)
        c = (rng.permutation(n) % 2).reshape(1, n, 1).astype(np.float32)
        y = rng.standard_normal((b, 1, 16)).astype(np.float32)
        v = rng.standard_normal((1, p + n, 8)).astype(np.float32)
        assert 0 < c.sum() < n, "trivial condition"
        inp, out = f"{work}/new_ops_in.npz", f"{work}/new_ops_out.npz"
        np.savez(inp, x=x, c=c, y=y, v=v, start=np.int64(p))
        subprocess.run([weft, "model", "run", wmod, "--inputs", inp, "--outputs", out, "--poison"],
                       check=True, stdout=subprocess.DEVNULL)
        got = np.load(out)
        want = reference(x.astype(np.float64), c, y, v, p, n)
        for i, name in enumerate(["slice", "where", "layer_norm", "gelu_tanh", "attention"]):
            g = got[f"result.{i}"]
            err = np.max(np.abs(g - want[i])) / max(1.0, np.max(np.abs(want[i])))
            ok = g.shape == want[i].shape and err < 1e-5 * (p + n) and np.std(want[i]) > 0.1
            print(f"b={b} n={n} p={p} {name}: shape {g.shape}, max rel err {err:.2e} "
                  f"{'ok' if ok else 'MISMATCH'}")
            if not ok:
                failures.append(name)
    # x shorter than p + n: a located failure naming the variables (exit 1).
    np.savez(inp, x=x[:, 1:], c=c, y=y, v=v, start=np.int64(p))
    r = subprocess.run([weft, "model", "run", wmod, "--inputs", inp, "--outputs", out],
                       capture_output=True, text=True)
    located = "new_ops.wmod:7:59: error: parameter 'x'" in r.stderr 
    print(f"x too short: exit {r.returncode}, located {located}")
    if r.returncode != 1 or not located:
        print(r.stdout, r.stderr)
        failures.append("bad x")
    if failures:
        print("FAILED:", ", ".join(failures))
        return 1
    print("all outputs match")
    return 0


if __name__ == "__main__":
    sys.exit(main())
