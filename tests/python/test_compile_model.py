"""The compiled-model workflow from Python: weft.load_model on an .onnx file (against onnxruntime),
weft.compile_model into a directory (against the uncompiled model and the CLI's `weft run DIR`),
weft.load_compiled, and the errors (missing files, bad bindings, a directory that is not one)."""

import json
import pathlib
import subprocess

import numpy as np
import pytest

import weft

# The importer's tolerance against onnxruntime (docs/onnx.md), and a compiled model's against
# the uncompiled one (the check `weft bench DIR` makes).
RTOL, ATOL = 1e-3, 1e-4
COMPILED_SCALED_ERROR = 1e-4


@pytest.fixture
def tiny_mlp(root):
    return root / "tests" / "model" / "tiny_mlp.wmod"


@pytest.fixture
def bert(root):
    return root / "examples" / "onnx" / "bert_tiny.onnx"


def onnx_or_skip(load):
    """`load()`, skipping the test when this weft was built without ONNX import."""
    try:
        return load()
    except weft.UserError as e:
        if "without ONNX support" in str(e):
            pytest.skip(str(e))
        raise


def bert_feeds(batch, seq, seed):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 100, (batch, seq), dtype=np.int64)
    mask = np.ones((batch, seq), dtype=np.int64)
    mask[-1, seq - 2:] = 0  # padding in the last row
    assert len(np.unique(ids)) > 1 and mask.min() == 0, "the inputs must not be trivial"
    return {"input_ids": ids, "attention_mask": mask}


def mlp_inputs(b, n, seed):
    rng = np.random.default_rng(seed)
    inputs = {"x": rng.standard_normal((b, n, 32)), "g": 1 + 0.1 * rng.standard_normal((1, 1, 32)),
              "w1": rng.standard_normal((1, 32, 48)) / 6, "w2": rng.standard_normal((1, 32, 48)) / 6,
              "w3": rng.standard_normal((1, 48, 32)) / 7}
    inputs = {k: v.astype(np.float32) for k, v in inputs.items()}
    assert all(v.std() > 0.01 for v in inputs.values()), "the inputs must not be trivial"
    return inputs


def scaled_error(got, want):
    want = np.asarray(want, dtype=np.float64)
    return np.abs(np.asarray(got, dtype=np.float64) - want).max() / max(np.abs(want).max(), 1e-30)


# --- load_model on ONNX -----------------------------------------------------------------------

def test_load_model_imports_onnx_and_matches_onnxruntime(bert):
    ort = pytest.importorskip("onnxruntime", reason="the oracle: tests/python/requirements.txt")
    model = onnx_or_skip(lambda: weft.load_model(bert, bounds={"seq": 64}))
    assert isinstance(model, weft.Model) and model.functions == ["main"]
    # The weights stay with the model: main takes the graph's inputs, by their ONNX names.
    assert [p.name for p in model.params()] == ["input_ids", "attention_mask"]
    feeds = bert_feeds(2, 9, seed=3)
    got = model.run(feeds)
    session = ort.InferenceSession(str(bert), providers=["CPUExecutionProvider"])
    want = session.run(None, feeds)
    assert len(got) == len(want) == 2
    for g, w in zip(got, want):
        assert np.isfinite(w).all() and w.std() > 0.1, "the reference must not be trivial"
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)


def test_load_model_onnx_bounds_reach_the_import(bert):
    model = onnx_or_skip(lambda: weft.load_model(bert, bounds={"seq": 32}))
    assert "seq <= 32" in str(model)
    assert model.notes == []
    # Its position table has 64 rows: without a bound, seq is narrowed from 4096 to 64, and the
    # model says so; a bound above 64 is refused with the limit.
    narrowed = weft.load_model(bert)
    assert "seq <= 64" in str(narrowed)
    assert len(narrowed.notes) == 1 and "seq is bounded by 64, not 4096" in narrowed.notes[0]
    with pytest.raises(weft.UserError, match=r"seq is 100 here: give it at most 64"):
        weft.load_model(bert, bounds={"seq": 100})


def test_load_model_errors(tmp_path, tiny_mlp):
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\x01\x02 not a ModelProto")
    with pytest.raises(weft.UserError, match="garbage.onnx"):
        onnx_or_skip(lambda: weft.load_model(garbage))
    with pytest.raises(weft.UserError, match="bounds apply to ONNX models"):
        weft.load_model(tiny_mlp, bounds={"n": 4})


# --- compile_model ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def compiled_mlp(request, tmp_path_factory):
    """tests/model/tiny_mlp.wmod compiled at two bindings with a small budget and its own cache."""
    root = request.config.rootpath
    work = tmp_path_factory.mktemp("compiled_mlp")
    lines = []
    d = weft.compile_model(root / "tests" / "model" / "tiny_mlp.wmod", work / "out",
                           [{"b": 2, "n": 4}, {"b": 1, "n": 3}], time_budget=4, state_budget=300,
                           cache=work / "cache", progress=lines.append)
    return d, lines, work


def test_compile_model_writes_the_directory_and_its_summary(compiled_mlp):
    d, lines, work = compiled_mlp
    assert isinstance(d, weft.CompiledModelDir)
    assert any(line.startswith("region 1/") for line in lines), lines
    for f in ["model.wmod", "original.wmod", "summary.json", "ugraphs", "code"]:
        assert (work / "out" / f).exists(), f
    assert d.summary == json.loads((work / "out" / "summary.json").read_text())
    assert d.bindings == [{"b": 2, "n": 4}, {"b": 1, "n": 3}]
    totals = d.summary["totals"]
    assert totals["regions"] >= 2 and totals["kernels_after"] < totals["kernels_before"]
    assert d.inputs() == ["x", "g", "w1", "w2", "w3"]


@pytest.mark.parametrize("b,n", [(2, 4), (1, 3), (3, 5)])  # two compiled bindings, one not
def test_compiled_model_matches_the_uncompiled_one(compiled_mlp, tiny_mlp, b, n):
    d, _, _ = compiled_mlp
    inputs = mlp_inputs(b, n, seed=10 * b + n)
    want = weft.load_model(tiny_mlp).run(inputs, dtype="f64")
    got = d.run(inputs, dtype="f64")
    assert list(got) == ["result"] and got["result"].shape == (b, n, 32)
    assert np.abs(want).max() > 0.1, "the reference must not be trivial"
    assert scaled_error(got["result"], want) <= COMPILED_SCALED_ERROR
    # Keywords and positions work the same as the dict.
    again = d.run(**inputs)["result"]
    assert again.dtype == np.float32
    np.testing.assert_allclose(again, got["result"], rtol=1e-6, atol=1e-6)
    by_position = d.run([inputs[k] for k in d.inputs()])["result"]
    np.testing.assert_array_equal(by_position, again)


def test_load_compiled_runs_as_the_cli_does(compiled_mlp, tmp_path, weft_binary):
    _, _, work = compiled_mlp
    d = weft.load_compiled(work / "out")
    assert d.summary["model"].endswith("tiny_mlp.wmod")
    # The absolute path finds the model from any directory (weft bench --peer).
    model_path = pathlib.Path(d.summary["model_path"])
    assert model_path.is_absolute() and model_path.name == "tiny_mlp.wmod" and model_path.exists()
    inputs = mlp_inputs(2, 4, seed=7)
    np.savez(tmp_path / "in.npz", **inputs)
    subprocess.run([weft_binary, "run", str(work / "out"), "--inputs", str(tmp_path / "in.npz"),
                    "--outputs", str(tmp_path / "out.npz")], check=True, capture_output=True)
    cli = np.load(tmp_path / "out.npz")
    got = d.run(inputs, dtype="f64")
    assert set(got) == set(cli.files)
    np.testing.assert_allclose(got["result"], cli["result"], rtol=1e-6, atol=1e-6)


def test_compile_model_of_an_onnx_model_runs_by_onnx_names(bert, tmp_path):
    d = onnx_or_skip(lambda: weft.compile_model(
        bert, tmp_path / "out", {"batch": 1, "seq": 7}, time_budget=2, state_budget=100,
        cache=False, progress=False, bounds={"seq": 64}, max_region_ops=2))
    assert (tmp_path / "out" / "weights.npz").exists()
    assert d.inputs() == ["input_ids", "attention_mask"]
    feeds = bert_feeds(1, 7, seed=5)
    got = d.run(feeds)
    assert set(got) == {"last_hidden_state", "pooler_output"}
    want = weft.load_model(bert, bounds={"seq": 64}).run(feeds, dtype="f64")
    for name, w in zip(["last_hidden_state", "pooler_output"], want):
        assert np.abs(w).max() > 0.1, "the reference must not be trivial"
        assert scaled_error(got[name], w) <= COMPILED_SCALED_ERROR, name


def test_compile_model_rewrite_and_fuse_options(tmp_path):
    """`rewrite=` and `fuse=` as `weft compile --rewrite` and `--no-fuse`: the e-graph by
    default, named in summary.json; 'none' leaves the rewrite step out."""
    model = tmp_path / "dist.wmod"
    model.write_text("""module dist
sym 1 <= n <= 64

fn main(x: f32[n, 16], w1: f32[16, 8], w2: f32[16, 8]) -> f32[n, 8] {
  dataflow {
    p = matmul(x, w1)
    q = matmul(x, w2)
    s = add(p, q)
  }
  return s
}
""")
    assert weft.compile_model.__kwdefaults__["rewrite"] == "egraph"
    assert weft.compile_model.__kwdefaults__["fuse"] is True
    weft.compile_model(model, tmp_path / "rw", {"n": 5}, time_budget=2, cache=False,
                       progress=False, build=False)
    summary = json.loads((tmp_path / "rw" / "summary.json").read_text())
    assert [f["mode"] for f in summary["rewrite"]] == ["egraph"]
    assert summary["rewrite"][0]["kernels_after"] < summary["rewrite"][0]["kernels_before"]
    weft.compile_model(model, tmp_path / "none", {"n": 5}, time_budget=2, cache=False,
                       progress=False, build=False, rewrite="none", fuse=False)
    summary = json.loads((tmp_path / "none" / "summary.json").read_text())
    assert summary["rewrite"] == []


def test_compile_model_errors(tiny_mlp, tmp_path):
    out, cache = tmp_path / "out", tmp_path / "cache"
    with pytest.raises(weft.UserError) as info:
        weft.compile_model(tmp_path / "missing.wmod", out, {"b": 1}, cache=cache, progress=False)
    assert info.value.file == str(tmp_path / "missing.wmod")
    with pytest.raises(weft.UserError, match="'q' is not a symbolic variable of the model"):
        weft.compile_model(tiny_mlp, out, {"b": 1, "q": 3}, cache=cache, progress=False)
    with pytest.raises(weft.UserError, match="b = 65 is not within"):
        weft.compile_model(tiny_mlp, out, {"b": 65, "n": 1}, cache=cache, progress=False)
    with pytest.raises(weft.UserError, match="is not a name and an integer"):
        weft.compile_model(tiny_mlp, out, {"b": "one"}, cache=cache, progress=False)
    with pytest.raises(weft.UserError, match="target"):
        weft.compile_model(tiny_mlp, out, {"b": 1, "n": 2}, target="nope", cache=cache,
                           progress=False)
    with pytest.raises(weft.UserError, match="expected none, backtrack or egraph"):
        weft.compile_model(tiny_mlp, out, {"b": 1, "n": 2}, rewrite="tensat", cache=cache,
                           progress=False)
    assert not out.exists()  # nothing written for a compile that failed before it ran
    with pytest.raises(weft.UserError, match="not a compiled model directory"):
        weft.load_compiled(tmp_path)


def test_compiled_run_errors(compiled_mlp):
    d, _, _ = compiled_mlp
    inputs = mlp_inputs(2, 4, seed=1)
    del inputs["w3"]
    with pytest.raises(weft.UserError, match="missing input: w3"):
        d.run(inputs)
    with pytest.raises(weft.UserError, match="has no input 'nope'"):
        d.run(mlp_inputs(2, 4, seed=1), nope=np.zeros(1))
    with pytest.raises(weft.UserError, match="function"):
        d.run(mlp_inputs(2, 4, seed=1), function="absent")


def test_compiled_run_backends_agree(compiled_mlp):
    """The same directory's µGraphs as compiled CPU code, through the interpreter and as the
    generated CUDA run on the host (lowered for h100: the directory was compiled for cpu)."""
    d, _, _ = compiled_mlp
    inputs = mlp_inputs(2, 4, seed=3)
    want = d.run(inputs, dtype="f64", backend="interp")["result"]
    assert np.abs(want).max() > 0.1, "the reference must not be trivial"
    for backend in ["cpu", "cuda-emulation"]:
        got = d.run(inputs, dtype="f64", backend=backend)["result"]
        assert scaled_error(got, want) <= COMPILED_SCALED_ERROR, backend
    with pytest.raises(weft.UserError, match="backend must be"):
        d.run(inputs, backend="tpu")


def test_compiled_run_as_one_persistent_kernel(compiled_mlp):
    """``megakernel=True``: the function traced at the inputs' binding and run as one persistent
    kernel in host emulation gives the device-resident run's results exactly (the same kernel
    bodies on the same values)."""
    d, _, _ = compiled_mlp
    inputs = mlp_inputs(2, 4, seed=5)
    want = d.run(inputs, backend="cuda-emulation")["result"]
    assert np.abs(want).max() > 0.1, "the reference must not be trivial"
    got = d.run(inputs, megakernel=True, workers=2)["result"]
    assert np.array_equal(got, want)
    with pytest.raises(weft.UserError, match="megakernel runs with backend"):
        d.run(inputs, megakernel=True, backend="interp")


def test_compiled_decode_of_an_exported_decoder_with_its_cache(root, tmp_path):
    """``decode``: the corpus decoder exported with its KV cache (past_key_values.* in, present.*
    out) decodes greedily on the VM, with a growing cache and with a cache of fixed capacity, to
    onnxruntime's tokens (``weft decode DIR``; the persistent kernel: tests/model_decode_test.cpp)."""
    corpus = root / "examples" / "onnx" / "corpus"
    with np.load(corpus / "llama_kv_classic_dynamic.greedy.npz") as z:
        prompt = z["prompt"]
        want = [int(z["prompt_token"][0])] + [int(t) for t in z["tokens"]]
    assert len(set(want)) >= 4, "the reference decode must not be trivial"
    d = onnx_or_skip(lambda: weft.compile_model(
        corpus / "llama_kv_classic_dynamic.onnx", tmp_path / "kv",
        {"batch": 1, "seq": 1, "past_seq": 10, "total_seq": 11}, target="h100", time_budget=2,
        progress=False, build=False,
        bounds={"batch": 4, "past_seq": 64, "seq": 64, "total_seq": 64}))
    growing = d.decode(prompt, tokens=8, backend="interp")
    assert growing["tokens"] == want[:8]
    assert growing["capacity"] == 0 and len(growing["step_seconds"]) == 8
    fixed = d.decode(prompt.tolist(), tokens=7, backend="interp", capacity=10)
    assert fixed["tokens"] == want[:7]
    assert fixed["compiled_steps"] == 11 and fixed["note"] == ""
    with pytest.raises(weft.UserError, match="holds a prompt of 5 and 7 new tokens at most"):
        d.decode(prompt, tokens=8, capacity=10, backend="interp")
    with pytest.raises(weft.UserError, match="megakernel=True"):
        d.decode(prompt, tokens=2, megakernel=True, backend="interp")
