"""Runs ONNX models on weft (`weft model run`) or on onnxruntime and compares outputs: shared by scripts/onnx_node_tests.py and tests/python."""
# weft is driven through its CLI, as a user would: inputs go to an .npz by the graph's input names,
# `weft model run MODEL.onnx --inputs IN.npz --outputs OUT.npz` writes the outputs by the graph's
# output names. onnxruntime runs the same feeds as a second backend, so every harness here can be
# checked on a known-good implementation before weft goes through it.
import os
import pathlib
import re
import subprocess
import tempfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]


class BackendError(Exception):
    """The backend refused or failed the model (its message is the reason)."""


def weft_binary():
    """$WEFT_BINARY, else build/weft of this checkout; None when neither exists."""
    given = os.environ.get("WEFT_BINARY")
    if given:
        return os.path.abspath(given)
    default = ROOT / "build" / "weft"
    return str(default) if default.exists() else None


def _run(cmd, timeout):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def weft_onnx_ops(binary):
    """The ONNX operators the weft binary declares supported, as {op_type: (since, until)} opset
    ranges (None where a line gives no range), or None when the binary has no ONNX import. Read
    from `weft model onnx-ops` (else `weft onnx-ops`): one operator a line, `OpType [SINCE [UNTIL]]`."""
    for cmd in (["model", "onnx-ops"], ["onnx-ops"]):
        try:
            r = _run([binary, *cmd], 60)
        except OSError:
            return None
        if r.returncode != 0:
            continue
        ops = {}
        for line in r.stdout.splitlines():
            m = re.match(r"\s*([A-Z][A-Za-z0-9]*)\b(?:[\s,:]+(\d+))?(?:[\s,:+\-]+(\d+))?", line)
            if m:
                since = int(m.group(2)) if m.group(2) else None
                until = int(m.group(3)) if m.group(3) else None
                ops[m.group(1)] = (since, until)
        if ops:
            return ops
    return None


def weft_supports_onnx(binary):
    """(True, "") when `weft model run` takes .onnx files, else (False, why) — the reason a test
    skips with. The importer's contract (branch i15-onnx): `weft model onnx-ops` lists operators."""
    if binary is None:
        return False, "no weft CLI binary (build it with `make build` or set WEFT_BINARY)"
    if not os.access(binary, os.X_OK):
        return False, f"WEFT_BINARY={binary} is not an executable"
    if weft_onnx_ops(binary) is None:
        return False, f"{binary} has no ONNX import (`weft model onnx-ops` and `weft onnx-ops` fail)"
    return True, ""


def weft_takes_pb_dirs(binary):
    """Whether `weft model run` reads a node test's data set directly (--inputs-pb DIR: input_N.pb
    in graph-input order, integer inputs such as shapes and axes fixed at import)."""
    try:
        r = _run([binary, "model", "run", "--help"], 60)
    except OSError:
        return False
    return "--inputs-pb" in r.stdout


def run_weft(binary, model_path, feeds, timeout=300, data_set=None, extra_args=()):
    """Outputs of `weft model run` by output name: on feeds (name -> array) through an .npz, or
    on a node test's data set directory when data_set is given."""
    with tempfile.TemporaryDirectory(prefix="weft-onnx-") as tmp:
        inputs, outputs = os.path.join(tmp, "in.npz"), os.path.join(tmp, "out.npz")
        if data_set is None:
            np.savez(inputs, **feeds)
            given = ["--inputs", inputs]
        else:
            given = ["--inputs-pb", str(data_set)]
        cmd = [binary, "model", "run", str(model_path), *given, "--outputs", outputs, *extra_args]
        try:
            r = _run(cmd, timeout)
        except subprocess.TimeoutExpired:
            raise BackendError(f"timed out after {timeout} s: {' '.join(cmd)}")
        if r.returncode != 0:
            msg = (r.stderr.strip() or r.stdout.strip()).splitlines()
            raise BackendError(f"exit {r.returncode}: " + (" | ".join(msg[-3:]) if msg else "(no message)"))
        try:
            with np.load(outputs) as z:
                return {k: z[k] for k in z.files}
        except Exception as e:  # a missing or malformed .npz is the backend's failure, not the harness's
            raise BackendError(f"unreadable outputs {outputs}: {type(e).__name__}: {e}")


def run_onnxruntime(model_path, feeds, data_set=None):
    import onnxruntime as ort

    try:
        options = ort.SessionOptions()
        options.log_severity_level = 3  # errors only: old-opset node tests draw warnings
        session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        return dict(zip(names, session.run(None, feeds)))
    except Exception as e:  # onnxruntime raises its own exception types for unsupported models
        raise BackendError(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")


def make_runner(backend, binary=None, timeout=300):
    """A function (model_path, feeds, data_set=None) -> outputs for backend 'weft' or
    'onnxruntime'; data_set (a node test's directory holding feeds as input_N.pb) goes to weft
    as such when `weft model run` takes --inputs-pb."""
    if backend == "onnxruntime":
        return run_onnxruntime
    if backend == "weft":
        pb = weft_takes_pb_dirs(binary)
        return lambda path, feeds, data_set=None: run_weft(binary, path, feeds, timeout, data_set if pb else None)
    raise ValueError(f"unknown backend {backend!r}")


def load_tensor(path, declared=None):
    """A TensorProto file (input_N.pb / output_N.pb of ONNX's tests) as a NumPy array; `declared`
    is the elem_type the graph gives the value (older test data stores bfloat16 as UINT16)."""
    import onnx
    from onnx import numpy_helper

    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    a = numpy_helper.to_array(t)
    bf16 = onnx.TensorProto.BFLOAT16
    if (t.data_type == bf16 or declared == bf16) and a.dtype == np.uint16:
        # bfloat16 as its bit patterns: widen them to the f32 values.
        a = (a.astype(np.uint32) << 16).view(np.float32)
    return a


def dims_binding(path, inputs):
    """The dim_params of the model's graph inputs at the values `inputs` (name -> array) give them,
    as `weft compile --bind` takes them ("batch=1,seq=7")."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    out = {}
    for vi in model.graph.input:
        for axis, d in enumerate(vi.type.tensor_type.shape.dim):
            if d.dim_param and vi.name in inputs:
                out[d.dim_param] = inputs[vi.name].shape[axis]
    return ",".join(f"{k}={v}" for k, v in sorted(out.items()))


def graph_inputs(model):
    """The graph inputs a caller feeds: graph.input less those an initializer provides."""
    inits = {i.name for i in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits]


def mismatch(name, got, ref, rtol, atol):
    """None when got matches ref (same shape; within rtol/atol for floats, exact for integers and
    booleans; NaN where the reference has NaN), else a one-line description."""
    if got is None:
        return f"{name}: missing from the outputs"
    got = np.asarray(got)
    if got.shape != ref.shape:
        return f"{name}: shape {got.shape}, expected {ref.shape}"
    if ref.dtype == object or ref.dtype.kind in "US":
        return f"{name}: string outputs are not comparable through .npz"
    if ref.dtype.kind in "biu":
        # weft's .npz writer may widen integers to floats; the values must still be exact.
        bad = ~(got.astype(np.float64) == ref.astype(np.float64))
        tol = "exact"
    else:
        g, r = got.astype(np.float64), ref.astype(np.float64)
        bad = ~np.isclose(g, r, rtol=rtol, atol=atol, equal_nan=True)
        tol = f"rtol {rtol:g} atol {atol:g}"
    if not bad.any():
        return None
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    err = np.abs(got.astype(np.float64) - ref.astype(np.float64))
    return (f"{name}: {int(bad.sum())}/{bad.size} elements differ ({tol}); first at {first}: "
            f"got {got[first]!r}, expected {ref[first]!r}; max abs error {np.nanmax(err):.3g}")
