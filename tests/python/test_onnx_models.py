"""The transformer models of examples/onnx (BERT-style encoder, Llama/Qwen3-style decoder) on weft against onnxruntime at several shapes."""
# One ONNX file per model with symbolic batch and seq; weft runs it at each (batch, seq) through
# `weft model run`, onnxruntime is the oracle (tests/python/requirements.txt). Inputs are random
# token ids (and, for the encoder, an attention mask with padding in every row), checked to be
# non-trivial first. Also checks that scripts/export_transformers.py still writes the committed
# bytes, so the files the tests use are the ones the script describes.
import pathlib
import subprocess
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the test oracles: `make python` installs tests/python/requirements.txt")
import onnx_harness as h  # noqa: E402

MODELS = ["bert_tiny", "llama_tiny"]
SHAPES = [(1, 7), (3, 16), (2, 33)]  # (batch, seq); seq <= 64, the models' max positions
RTOL, ATOL = 1e-3, 1e-4
# seq indexes tables of max-positions rows (64): the bound a user states for the dim_param.
BOUND = ["--bound", "seq=64"]


def onnx_path(root, name):
    return root / "examples" / "onnx" / f"{name}.onnx"


def random_feeds(model, batch, seq, rng):
    # The vocabulary: rows of the table that input_ids index.
    lookup = next(n for n in model.graph.node if n.op_type == "Gather" and n.input[1] == "input_ids")
    vocab = next(i.dims[0] for i in model.graph.initializer if i.name == lookup.input[0])
    feeds = {"input_ids": rng.integers(0, vocab, (batch, seq), dtype=np.int64)}
    assert len(np.unique(feeds["input_ids"])) > 1, "token ids must vary"
    if any(i.name == "attention_mask" for i in model.graph.input):
        mask = np.ones((batch, seq), dtype=np.int64)
        for row in range(batch):
            mask[row, seq - 1 - (2 * row + 1) % (seq - 1):] = 0  # 1 .. seq-1 padded positions per row
        assert mask.min() == 0 and mask.max() == 1 and mask.sum(axis=1).min() >= 1
        feeds["attention_mask"] = mask
    return feeds


@pytest.mark.onnx_models
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"b{s[0]}s{s[1]}")
@pytest.mark.parametrize("name", MODELS)
def test_model_matches_onnxruntime(name, shape, root, weft_onnx):
    path = onnx_path(root, name)
    model = onnx.load(path)
    feeds = random_feeds(model, *shape, np.random.default_rng(shape[0] * 100 + shape[1]))
    expected = h.run_onnxruntime(path, feeds)
    for out, value in expected.items():
        assert value.shape[0] == shape[0] and (value.ndim < 3 or value.shape[1] == shape[1]), value.shape
        assert np.isfinite(value).all() and value.std() > 0.1, f"{out}: the reference must be non-trivial"
    try:
        got = h.run_weft(weft_onnx, path, feeds, extra_args=BOUND)
    except h.BackendError as e:
        pytest.fail(f"weft model run {path.name} at batch {shape[0]}, seq {shape[1]}: {e}")
    bad = [m for out, ref in expected.items() if (m := h.mismatch(out, got.get(out), ref, RTOL, ATOL))]
    assert not bad, f"{name} at {shape}: " + "; ".join(bad)


def test_export_script_writes_the_committed_models(root, tmp_path):
    r = subprocess.run([sys.executable, str(root / "scripts" / "export_transformers.py"), "--out", str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for name in MODELS:
        written = (tmp_path / f"{name}.onnx").read_bytes()
        assert written == onnx_path(root, name).read_bytes(), (
            f"examples/onnx/{name}.onnx differs from what scripts/export_transformers.py writes: rerun it")
        onnx.checker.check_model(onnx.load(tmp_path / f"{name}.onnx"), full_check=True)
        assert len(written) < 1 << 20


@pytest.mark.parametrize("name", MODELS)
def test_models_have_symbolic_batch_and_seq(name, root):
    model = onnx.load(onnx_path(root, name))
    for x in model.graph.input:
        assert [d.dim_param for d in x.type.tensor_type.shape.dim] == ["batch", "seq"], x.name
    assert model.opset_import[0].version == 17


# Models that are not in the repository: other configurations of the same script (one layer, no
# mask, three heads; plain multi-head attention with kv heads = heads, no q/k norm, tied embeddings,
# odd sizes), written to a temporary folder.
VARIANTS = {
    "bert_1layer_nomask": lambda x: x.BertConfig(name="v1", layers=1, hidden=48, heads=3, ffn=80, vocab=97,
                                                 attention_mask=False, seed=101),
    "llama_mha_tied": lambda x: x.LlamaConfig(name="v2", layers=3, hidden=48, heads=4, kv_heads=4, ffn=72,
                                              vocab=113, qk_norm=False, tie_embeddings=True, seed=102),
    "llama_gqa4": lambda x: x.LlamaConfig(name="v3", layers=1, hidden=64, heads=8, kv_heads=2, ffn=96,
                                          vocab=64, seed=103),
}


@pytest.mark.onnx_models
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_other_configurations_match_onnxruntime(variant, root, tmp_path, weft_onnx):
    sys.path.insert(0, str(root / "scripts"))
    import export_transformers as x

    path = tmp_path / f"{variant}.onnx"
    onnx.save(x.make_model(VARIANTS[variant](x)), path)
    model = onnx.load(path)
    for shape in [(2, 5), (1, 12)]:
        feeds = random_feeds(model, *shape, np.random.default_rng(shape[1]))
        expected = h.run_onnxruntime(path, feeds)
        try:
            got = h.run_weft(weft_onnx, path, feeds, extra_args=BOUND)
        except h.BackendError as e:
            pytest.fail(f"weft model run {variant} at {shape}: {e}")
        bad = [m for out, ref in expected.items() if (m := h.mismatch(out, got.get(out), ref, RTOL, ATOL))]
        assert not bad, f"{variant} at {shape}: " + "; ".join(bad)


# The whole stack from an ONNX file: one `weft compile` (import, partition, specialization per
# binding, each region superoptimized and verified, CPU code built), then `weft run` of the
# compiled folder at the compiled bindings and at one it was not compiled for (the original
# body), against onnxruntime. A small search budget keeps the test short; the cache is per test.
@pytest.mark.onnx_models
@pytest.mark.parametrize("name", MODELS)
def test_compiled_model_matches_onnxruntime(name, root, weft_onnx, tmp_path):
    path = onnx_path(root, name)
    model = onnx.load(path)
    compiled, other = [(1, 7), (2, 16)], (2, 9)
    out_dir = tmp_path / "compiled"
    cmd = [weft_onnx, "compile", str(path), "-o", str(out_dir), "--time-budget", "6",
           "--cache", str(tmp_path / "cache"), *BOUND]
    for b, s in compiled:
        cmd += ["--bind", f"batch={b},seq={s}"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    line = next(l for l in r.stdout.splitlines() if "kernels" in l)
    before, after = (int(x) for x in line.rsplit("kernels", 1)[1].split("->"))
    assert after < before, line  # fewer kernels than one per operator
    for shape in compiled + [other]:
        feeds = random_feeds(model, *shape, np.random.default_rng(shape[0] * 1000 + shape[1]))
        expected = h.run_onnxruntime(path, feeds)
        np.savez(tmp_path / "in.npz", **feeds)
        r = subprocess.run([weft_onnx, "run", str(out_dir), "--inputs", str(tmp_path / "in.npz"),
                            "--outputs", str(tmp_path / "out.npz")], capture_output=True, text=True,
                           timeout=600)
        assert r.returncode == 0, r.stderr[-2000:]
        got = dict(np.load(tmp_path / "out.npz"))
        bad = [m for out, ref in expected.items() if (m := h.mismatch(out, got.get(out), ref, RTOL, ATOL))]
        assert not bad, f"compiled {name} at {shape}: " + "; ".join(bad)
