"""weft.run (the reference interpreter), weft.compile (a backend) and weft.verify."""

import numpy as np
import pytest

import weft

SMALL = """program small
input X: f32[4, 64]
input W: f32[64, 32]
N = rms_norm(X, eps=1e-6)
O = matmul(N, W)
P = silu(O)
output O, P
"""


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (4, 64)).astype(np.float32)
    w = rng.uniform(-1, 1, (64, 32)).astype(np.float32)
    # Not trivial: varied, non-zero values.
    assert np.std(x) > 0.3 and np.std(w) > 0.3 and np.count_nonzero(x) == x.size
    return x, w


def reference(x, w):
    n = x / np.sqrt(np.mean(x.astype(np.float64) ** 2, axis=1, keepdims=True) + 1e-6)
    o = n @ w.astype(np.float64)
    return o, o / (1 + np.exp(-o))


def close(got, want, tol):
    scale = np.max(np.abs(want))
    assert scale > 0.1
    assert np.max(np.abs(np.asarray(got, dtype=np.float64) - want)) <= tol * scale


def test_run_matches_numpy_by_position_and_by_name():
    p = weft.parse(SMALL)
    x, w = inputs()
    o, s = weft.run(p, [x, w])
    assert o.shape == (4, 32) and o.dtype == np.float32
    want_o, want_s = reference(x, w)
    close(o, want_o, 1e-5)
    close(s, want_s, 1e-5)
    o64, _ = weft.run(p, {"W": w, "X": x}, dtype="f64")
    assert o64.dtype == np.float64
    close(o64, want_o, 1e-12)


def test_compiled_cpu_program_matches_the_interpreter(tmp_path):
    p = weft.parse(SMALL)
    f = weft.compile(p, target="cpu", cache_dir=tmp_path)
    assert f.backend == "cpu" and f.target == "cpu"
    assert "weft_main" in f.source
    x, w = inputs(1)
    o, s = f(x, w)
    ro, rs = weft.run(p, [x, w], dtype="f64")
    close(o, ro, 1e-5)
    close(s, rs, 1e-5)
    o2, s2 = f(W=w, X=x)
    np.testing.assert_array_equal(o, o2)
    # Outputs are fresh arrays each call, owned by NumPy.
    o[...] = 0
    o3, _ = f(x, w)
    np.testing.assert_array_equal(o3, o2)
    # Other array-likes and dtypes are converted.
    o4, _ = f(x.astype(np.float64), w.tolist())
    np.testing.assert_array_equal(o4, o2)
    timing = f.time(x, w, warmup=1, reps=3)
    assert timing["reps"] == 3 and timing["median_us"] > 0


def test_bad_inputs_are_user_errors(tmp_path):
    p = weft.parse(SMALL)
    x, w = inputs()
    with pytest.raises(weft.UserError, match=r"input X: expected shape \[4, 64\]"):
        weft.run(p, [x.T, w])
    with pytest.raises(weft.UserError, match="missing input: W"):
        weft.run(p, {"X": x})
    with pytest.raises(weft.UserError, match="no input 'Q'"):
        weft.run(p, {"X": x, "W": w, "Q": w})
    with pytest.raises(weft.UserError, match="dtype"):
        weft.run(p, [x, w], dtype="f16")
    f = weft.compile(p, cache_dir=tmp_path)
    with pytest.raises(weft.UserError, match="given twice"):
        f(x, X=x)
    with pytest.raises(weft.UserError, match="takes 2 inputs"):
        f(x, w, w)
    with pytest.raises(weft.UserError, match="weft.Program"):
        weft.run("not a program", [x, w])


def test_compile_for_a_gpu_without_one_says_so(example):
    p = weft.load(example("gated_mlp.weft"))
    with pytest.raises(weft.UserError, match="GPU|device|CUDA"):
        weft.compile(p, target="h100")
    with pytest.raises(weft.UserError, match="backend"):
        weft.compile(p, target="cpu", backend="cuda-emulation")
    with pytest.raises(weft.UserError, match="unknown backend"):
        weft.compile(p, target="cpu", backend="tpu")


def test_verify_the_fused_example_against_its_input(example):
    a = weft.load(example("rms_norm_linear.weft"))
    b = weft.load(example("rms_norm_linear.fused.weft"))
    r = weft.verify(a, b, target_error=2.0 ** -20, threads=1)
    assert r.equivalent and bool(r)
    assert r.error_bound_log2 <= -20
    assert r.float_error is not None and 0 < r.float_error < 1e-3


def test_verify_finds_a_difference():
    a = weft.parse(SMALL)
    b = weft.parse(SMALL.replace("P = silu(O)", "P = exp(O)"))
    r = weft.verify(a, b, threads=1)
    assert not r.equivalent and r.verdict != "equivalent"
    c = weft.parse(SMALL.replace("matmul(N, W)", "matmul(X, W)"))
    r2 = weft.verify(a, c, threads=1)
    assert not r2.equivalent and r2.output == 0 and r2.element is not None


def test_verify_refuses_different_signatures():
    a = weft.parse(SMALL)
    b = weft.parse(SMALL.replace("output O, P", "output O"))
    with pytest.raises(weft.UserError):
        weft.verify(a, b)


def test_torch_tensors_in_and_out(tmp_path):
    torch = pytest.importorskip("torch")
    p = weft.parse(SMALL)
    x, w = inputs(2)
    tx, tw = torch.from_numpy(x), torch.from_numpy(w)
    f = weft.compile(p, cache_dir=tmp_path)
    o, s = f(tx, tw)
    assert isinstance(o, torch.Tensor) and o.dtype == torch.float32 and tuple(o.shape) == (4, 32)
    no, ns = f(x, w)
    np.testing.assert_array_equal(o.numpy(), no)
    ro, _ = weft.run(p, [tx.half(), tw.half()])
    assert isinstance(ro, torch.Tensor)
    close(ro.numpy(), weft.run(p, [tx.half().float().numpy(), tw.half().float().numpy()],
                               dtype="f64")[0], 1e-5)
