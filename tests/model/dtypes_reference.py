#!/usr/bin/env python3
"""NumPy reference for tests/model/dtypes.wmod: f16 and bf16 tensors rounded after every operator,
casts between dtypes, and a µGraph's results rounded to its output dtype. The reference rounds at
the same points as weft's model VM (each operator's result, to f32 and then to the result's dtype;
np.float16 for f16, integer bit manipulation for bf16) and checks that the f16/bf16 results differ
from the f32 ones, and that outputs come back as <f2 (f16) and as bf16-exact <f4 (bf16).

usage: dtypes_reference.py WEFT_BINARY WORK_DIR
Exit status 0 when every output matches, 1 otherwise."""
import importlib.util
import pathlib
import subprocess
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "tiny_llama_reference", HERE.parent.parent / "examples" / "models" / "tiny_llama_reference.py")
_llama = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_llama)
to_f32, to_f16, to_bf16 = _llama.to_f32, _llama.to_f16, _llama.to_bf16

failures = []


def ulp(x, dtype):
    """The spacing of `dtype` at |x| (at least its smallest subnormal step)."""
    if dtype == "f32":
        return np.spacing(np.abs(x).astype(np.float32)).astype(np.float64)
    if dtype == "f16":
        return np.spacing(np.abs(x).astype(np.float16)).astype(np.float64)
    # bf16: 8 significant bits; the exponent of |x| in f32.
    e = np.floor(np.log2(np.maximum(np.abs(x), 2.0 ** -126)))
    return 2.0 ** (e - 7)


def check(name, got, want, exact, dtype):
    """Exact: bit-for-bit (NaN equal to NaN). Otherwise the orders of a sum differ from NumPy's:
    f16/bf16 within one unit in the last place and equal for most elements; f32 (whose roundings
    of the sum's terms the f64 reference does not make) within 1e-6 of the largest magnitude."""
    same = np.array_equal(got, want, equal_nan=True)
    if exact:
        ok = got.shape == want.shape and same
        detail = "exact" if ok else f"{np.sum(got != want)} elements differ"
    elif dtype == "f32":
        scaled = np.max(np.abs(got - want)) / np.max(np.abs(want))
        ok = got.shape == want.shape and scaled <= 1e-6
        detail = f"scaled error {scaled:.2e}"
    else:
        diff = np.abs(got - want)
        within = bool(np.all(diff <= ulp(want, dtype)))
        frac = float(np.mean(diff == 0))
        ok = got.shape == want.shape and within and frac >= 0.75
        detail = f"{frac:.0%} exact, max {np.max(diff / ulp(want, dtype)):.2f} ulp"
    print(f"  {name}: {detail} {'ok' if ok else 'MISMATCH'}")
    if not ok:
        failures.append(name)


def rms_norm(x):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-6)


def body(x, w, g, st):
    """The functions single/half/brain, each binding's result stored by `st`."""
    a = st(x * g)
    s = st(a + x)
    t = st(s * s)
    u = st(t - a)
    m = st(u @ w)
    return [u, m, st(rms_norm(m))]


def run(weft, work, function, args, flags=()):
    inp, out = f"{work}/{function}_in.npz", f"{work}/{function}_out.npz"
    np.savez(inp, **args)
    subprocess.run([weft, "model", "run", str(HERE / "dtypes.wmod"), "--function", function,
                    "--inputs", inp, "--outputs", out, *flags], check=True,
                   stdout=subprocess.DEVNULL)
    r = np.load(out)
    return [r[k] for k in sorted(r.files)] if len(r.files) > 1 else [r["result"]]


def main():
    weft, work = sys.argv[1], sys.argv[2]
    rng = np.random.default_rng(14)
    stores = {"single": ("f32", to_f32, np.float32), "half": ("f16", to_f16, np.float16),
              "brain": ("bf16", to_bf16, np.float32)}
    for n in [1, 5, 16]:
        # x in f64 (not representable in the dtypes: weft rounds it to the parameter's), w as
        # float16, g as float32: every input dtype the runner reads.
        x = 1.5 * rng.standard_normal((n, 8))
        w = (rng.standard_normal((8, 8)) / 3).astype(np.float16)
        g = (1 + 0.3 * rng.standard_normal((1, 8))).astype(np.float32)
        assert np.std(x) > 0.5 and to_f16(x).tolist() != x.tolist(), "trivial inputs"
        results = {}
        for function, (dtype, st, npdtype) in stores.items():
            print(f"n={n} {function} ({dtype})")
            got = run(weft, work, function, dict(x=x, w=w, g=g))
            want = body(st(x), st(w.astype(np.float64)), st(g.astype(np.float64)), st)
            for i, name in enumerate(["u", "m", "rms_norm"]):
                if got[i].dtype != npdtype:
                    print(f"  {name}: written as {got[i].dtype}, expected {np.dtype(npdtype)}")
                    failures.append(f"{function} {name} dtype")
                g64 = got[i].astype(np.float64)
                if dtype == "bf16" and not np.array_equal(to_bf16(g64), g64):
                    failures.append(f"{function} {name} is not bf16-exact")
                # u: elementwise products and sums, exact in f64 as in f32; m and rms_norm sum.
                check(f"{function} {name}", g64, want[i], i == 0, dtype)
            results[function] = [r.astype(np.float64) for r in got]
        # The narrow dtypes really round: beyond f32's tolerance from the f32 run, and not the f32
        # run rounded once at the end.
        for function in ["half", "brain"]:
            dtype, st, _ = stores[function]
            for i, name in enumerate(["u", "m", "rms_norm"]):
                f32 = results["single"][i]
                scaled = np.max(np.abs(results[function][i] - f32)) / np.max(np.abs(f32))
                rounded_once = np.array_equal(results[function][i], st(f32))
                ok = scaled > 1e-4 and not rounded_once
                print(f"  {function} {name} vs f32: scaled difference {scaled:.2e}, "
                      f"{'differs from' if not rounded_once else 'equals'} the f32 run rounded once"
                      f" {'ok' if ok else 'MISMATCH'}")
                if not ok:
                    failures.append(f"{function} {name} vs f32")

    # Casts, with values that overflow f16 (65520 rounds to infinity), f16 subnormals, ties and NaN.
    special = [65520.0, 65519.0, 1e-7, 2.0 ** -25, 1 / 3, -0.1, 1 + 2.0 ** -8, np.nan]
    x = np.concatenate([np.array(special)[None, :], 10 * rng.standard_normal((3, 8))]).astype(
        np.float32)
    print("casts")
    got = run(weft, work, "casts", dict(x=x))
    x64 = x.astype(np.float64)
    h = to_f16(x64)
    want = [h, to_bf16(h), to_bf16(x64), to_bf16(x64), to_f16(h + h)]
    types = [np.float16, np.float32, np.float32, np.float32, np.float16]
    for i, name in enumerate(["f32->f16", "f16->bf16", "f32->bf16", "bf16->f32", "f16 add"]):
        if got[i].dtype != types[i]:
            failures.append(f"cast {name} dtype")
        check(f"cast {name}", got[i].astype(np.float64), want[i], True, "f32")
    assert np.isinf(h[0, 0]) and 0 < h[0, 2] < 2.0 ** -14, "no overflow or subnormal tested"

    # A µGraph's result rounded to its f16 output, by the interpreter and by the CPU program.
    x = rng.standard_normal((4, 8))
    w = rng.standard_normal((4, 8))
    want = to_f16(to_f16(x) * to_f16(w) + to_f16(x))
    for executor in ["interp", "cpu"]:
        print(f"call_ugraph ({executor})")
        got = run(weft, work, "ugraph_half", dict(x=x, w=w), ["--ugraph-executor", executor])
        if got[0].dtype != np.float16:
            failures.append(f"ugraph {executor} dtype")
        check(f"call_ugraph {executor}", got[0].astype(np.float64), want, True, "f16")
    if failures:
        print("FAILED:", ", ".join(failures))
        return 1
    print("all outputs match")
    return 0


if __name__ == "__main__":
    sys.exit(main())
