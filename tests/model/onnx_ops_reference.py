#!/usr/bin/env python3
"""NumPy reference for the ONNX model operators (tests/model/onnx_cnn.wmod: conv, pools, LRN;
tests/model/onnx_tensor.wmod: pow, gather, slice_steps, expand, fill, dims_tensor, cast, clip,
abs, reciprocal, log, range, tile, pad):
runs `weft model run` at several bindings and compares every output with an implementation
written from the ONNX operator specification (shift-and-add convolution, pools by explicit
windows).

usage: onnx_ops_reference.py WEFT_BINARY WORK_DIR
Exit status 0 when every output matches within f32 tolerance, 1 otherwise."""
import itertools
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def conv(x, w, strides=None, pads=None, dilations=None, group=1):
    r = x.ndim - 2
    strides = strides or [1] * r
    pads = pads or [0] * (2 * r)
    dilations = dilations or [1] * r
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[i + r]) for i in range(r)])
    ks = w.shape[2:]
    out = [(xp.shape[2 + i] - dilations[i] * (ks[i] - 1) - 1) // strides[i] + 1 for i in range(r)]
    n, c = x.shape[:2]
    m, cg = w.shape[:2]
    y = np.zeros([n, m] + out)
    mg = m // group
    # Shift and add: each kernel tap multiplies a strided view of the padded input.
    for tap in itertools.product(*[range(k) for k in ks]):
        view = xp[(slice(None), slice(None)) + tuple(
            slice(tap[i] * dilations[i], tap[i] * dilations[i] + strides[i] * (out[i] - 1) + 1,
                  strides[i]) for i in range(r))]
        for g in range(group):
            wt = w[(slice(g * mg, (g + 1) * mg), slice(None)) + tuple(tap)]
            y[:, g * mg:(g + 1) * mg] += np.einsum("nc...,mc->nm...", view[:, g * cg:(g + 1) * cg],
                                                   wt)
    return y


def pool(x, kind, kernel, strides=None, pads=None, dilations=None, ceil_mode=0,
         count_include_pad=0):
    """kind: max, avg or argmax (MaxPool's Indices output)."""
    r = x.ndim - 2
    strides = strides or [1] * r
    pads = pads or [0] * (2 * r)
    dilations = dilations or [1] * r
    ins = x.shape[2:]
    out = []
    for i in range(r):
        span = dilations[i] * (kernel[i] - 1) + 1
        total = ins[i] + pads[i] + pads[i + r] - span
        o = (-(-total // strides[i]) if ceil_mode else total // strides[i]) + 1
        # A window that would start in the right padding is dropped (ONNX, PyTorch).
        if ceil_mode and (o - 1) * strides[i] >= ins[i] + pads[i]:
            o -= 1
        out.append(o)
    y = np.zeros(list(x.shape[:2]) + out)
    for nc in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for pos in itertools.product(*[range(o) for o in out]):
            vals, where, padded = [], [], 1
            for i in range(r):
                taps = [pos[i] * strides[i] - pads[i] + t * dilations[i] for t in range(kernel[i])]
                padded *= sum(1 for t in taps if -pads[i] <= t < ins[i] + pads[i + r])
            for tap in itertools.product(*[range(k) for k in kernel]):
                idx = [pos[i] * strides[i] - pads[i] + tap[i] * dilations[i] for i in range(r)]
                if all(0 <= idx[i] < ins[i] for i in range(r)):
                    vals.append(x[nc + tuple(idx)])
                    where.append(np.ravel_multi_index(nc + tuple(idx), x.shape))
            if kind == "max":
                y[nc + pos] = max(vals)
            elif kind == "argmax":
                y[nc + pos] = where[int(np.argmax(vals))]
            else:
                y[nc + pos] = sum(vals) / (padded if count_include_pad else len(vals))
    return y


def lrn(x, size, alpha, beta, bias=1.0):
    sq = np.zeros_like(x)
    c = x.shape[1]
    for ch in range(c):
        lo, hi = max(0, ch - (size - 1) // 2), min(c - 1, ch + int(np.ceil((size - 1) / 2)))
        sq[:, ch] = (x[:, lo:hi + 1] ** 2).sum(axis=1)
    return x / (bias + alpha / size * sq) ** beta


def cnn_case(rng, n, h, w):
    x = rng.standard_normal((n, 4, h, w))
    inputs = dict(x=x, k=rng.standard_normal((6, 2, 3, 3)), k1=rng.standard_normal((5, 4, 1, 1)),
                  s=rng.standard_normal((n, 3, w)), k3=rng.standard_normal((4, 3, 2)),
                  v=rng.standard_normal((n, 2, h, 4, 5)), k5=rng.standard_normal((3, 2, 2, 3, 2)))
    inputs = {k: v.astype(np.float32) for k, v in inputs.items()}
    a = {k: v.astype(np.float64) for k, v in inputs.items()}
    x = a["x"]
    mp = dict(kernel=[2, 3], strides=[2, 2], pads=[1, 1, 1, 0], ceil_mode=1)
    want = [
        ("conv", conv(x, a["k"], [2, 1], [1, 0, 2, 1], [1, 2], group=2)),
        ("conv 1x1", conv(x, a["k1"])),
        ("conv 1-d", conv(a["s"], a["k3"], [2], [1, 1])),
        ("conv 3-d", conv(a["v"], a["k5"], pads=[1, 0, 1, 1, 0, 1])),
        ("max_pool ceil", pool(x, "max", **mp)),
        ("max_pool_indices", pool(x, "argmax", **mp)),
        ("avg_pool ceil include_pad", pool(x, "avg", [3, 2], [2, 3], [1, 0, 1, 1], ceil_mode=1,
                                           count_include_pad=1)),
        ("avg_pool", pool(x, "avg", [3, 3], pads=[1, 1, 1, 1])),
        ("max_pool dilated", pool(x, "max", [2, 2], dilations=[2, 1])),
        ("global_avg_pool", x.mean(axis=(2, 3), keepdims=True)),
        ("global_max_pool", a["v"].max(axis=(2, 3, 4), keepdims=True)),
        ("lrn 3", lrn(x, 3, 0.5, 0.75, 1.5)),
        ("lrn 2", lrn(x, 2, 0.3, 1.0)),
    ]
    return inputs, want


def pad_reference(x, begins, ends, value):
    """ONNX Pad in constant mode; negative pads crop."""
    crop = tuple(slice(max(0, -b), x.shape[i] - max(0, -e))
                 for i, (b, e) in enumerate(zip(begins, ends)))
    return np.pad(x[crop], [(max(0, b), max(0, e)) for b, e in zip(begins, ends)],
                  constant_values=value)


def tensor_case(rng, n, m):
    x = rng.standard_normal((n, m, 5))
    inputs = dict(x=x, b=rng.uniform(0.3, 2.5, (n, m, 5)),
                  e=rng.permutation([-1.5, -1, 0.5, 2, 3] * 4)[:m].reshape(1, m, 1),
                  i1=rng.integers(-m, m, (3, 2)), i2=rng.integers(-5, 5, (4,)))
    inputs = {k: v.astype(np.int64 if k in ("i1", "i2") else np.float32)
              for k, v in inputs.items()}
    a = {k: v.astype(np.float64) for k, v in inputs.items()}
    x, big = a["x"], 2 ** 63 - 1
    xs = x * 37
    as_int = np.trunc(xs).astype(np.int64)
    want = [
        ("pow", a["b"] ** a["e"]),
        ("gather axis 1", np.take(x, inputs["i1"].astype(np.int64), axis=1)),
        ("gather axis -1", np.take(x, inputs["i2"].astype(np.int64), axis=-1)),
        ("slice_steps negative", x[:, -1:-big:-2, 4:0:-3]),
        ("slice_steps to the end", x[1:big]),
        ("slice_steps default axes", x[0:m, 1:-1:2]),
        ("expand", np.broadcast_to(a["e"], (n, 1, m, 3))),
        ("fill", np.full((n, 2), -2.5)),
        ("dims_tensor", np.array([n, m, n * m + 1], dtype=np.float64)),
        ("cast f16", inputs["x"].astype(np.float16).astype(np.float64)),
        ("cast i32", as_int.astype(np.int32).astype(np.float64)),
        ("cast u8", as_int.astype(np.uint8).astype(np.float64)),
        ("cast bool", (np.maximum(x, 0) != 0).astype(np.float64)),
        ("scale", xs),
        ("clip", np.clip(x, -0.5, 1.25)),
        ("abs", np.abs(x)),
        ("reciprocal", 1 / a["b"]),
        ("log", np.log(a["b"])),
        ("range", np.arange(m, -n, -3, dtype=np.float64)),
        ("tile", np.tile(x, (2, 1, 2))),
        ("pad", pad_reference(x, [1, 0, -1], [2, -1, 2], -0.75)),
    ]
    return inputs, want


# The NumPy type `weft model run` writes each integer or bool result in.
TYPED = {"max_pool_indices": np.int64, "dims_tensor": np.int64, "cast i32": np.int32,
         "cast u8": np.uint8, "cast bool": np.bool_, "range": np.int64}

CASES = [("onnx_cnn.wmod", cnn_case, [(1, 5, 5), (2, 8, 9), (1, 11, 6)]),
         ("onnx_tensor.wmod", tensor_case, [(2, 3), (3, 7), (2, 16)])]


def main():
    weft, work = sys.argv[1], sys.argv[2]
    rng = np.random.default_rng(15)
    failures = []
    for wmod, make, bindings in CASES:
        for binding in bindings:
            inputs, want = make(rng, *binding)
            inp, out = f"{work}/onnx_ops_in.npz", f"{work}/onnx_ops_out.npz"
            np.savez(inp, **inputs)
            subprocess.run([weft, "model", "run", f"{HERE}/{wmod}", "--inputs", inp, "--outputs",
                            out, "--poison"], check=True, stdout=subprocess.DEVNULL)
            got = np.load(out)
            for i, (name, w) in enumerate(want):
                g = got[f"result.{i}"]
                # Integer and bool results come in their own types (the model's dtypes).
                if name in TYPED and g.dtype != TYPED[name]:
                    failures.append(f"{name} at {binding}: dtype {g.dtype}, want {TYPED[name]}")
                g = g.astype(np.float64)
                err = np.max(np.abs(g - w)) / max(1.0, np.max(np.abs(w))) if w.size else 0.0
                # Non-trivial: the reference varies (argmax indices: several distinct ones).
                varied = w.size > 0 and (np.std(w) > 0.05 or (w.size <= 4 and np.ptp(w) > 1e-3)
                          or (name == "fill" and np.all(w == -2.5)))
                ok = g.shape == w.shape and err < 1e-5 and varied
                print(f"{wmod} {binding} {name}: shape {g.shape}, max rel err {err:.2e} "
                      f"{'ok' if ok else 'MISMATCH'}")
                if not ok:
                    print(f"  want shape {w.shape}")
                    failures.append(f"{name} at {binding}")
    if failures:
        print("FAILED:", ", ".join(failures))
        return 1
    print("all outputs match")
    return 0


if __name__ == "__main__":
    sys.exit(main())
