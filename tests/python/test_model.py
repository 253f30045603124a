"""Models from Python: weft.load_model on .wmod files, printing (against `weft model print`),
checking, running with the model VM against an independent NumPy implementation, compiled
µGraphs, and the errors (bad files located, run-time check failures, ONNX)."""

import importlib.util
import re
import subprocess

import numpy as np
import pytest

import weft


@pytest.fixture(scope="module")
def reference(request):
    """examples/models/tiny_llama_reference.py, the NumPy implementation of tiny_llama.wmod."""
    root = request.config.rootpath
    path = root / "examples" / "models" / "tiny_llama_reference.py"
    spec = importlib.util.spec_from_file_location("tiny_llama_reference", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def tiny_llama(root):
    return root / "examples" / "models" / "tiny_llama.wmod"


def test_print_round_trips_and_matches_the_cli(tiny_llama, tmp_path, weft_binary):
    m = weft.load_model(tiny_llama)
    assert m.name == "tiny_llama"
    assert {"prefill", "decode", "qkv"} <= set(m.functions)
    text = str(m)
    assert "fn prefill(" in text and "# f32[" in text  # the deduced type comments
    cli = subprocess.run([weft_binary, "model", "print", str(tiny_llama)], check=True,
                         capture_output=True, text=True).stdout
    assert text == cli
    again_path = tmp_path / "again.wmod"
    again_path.write_text(text)
    again = weft.load_model(again_path)
    assert str(again) == text
    assert again.text(type_comments=False) == m.text(type_comments=False)
    assert "# f32[" not in m.text(type_comments=False)
    summary = m.check()
    cli_check = subprocess.run([weft_binary, "model", "check", str(tiny_llama)], check=True,
                               capture_output=True, text=True).stdout
    assert cli_check == f"ok: {summary}\n"
    assert m.params("prefill")[:2] == [("tokens", "f32[b, n]"), ("pos", "int(p)")]
    assert "bind_params" in m.vm_program("prefill")


@pytest.mark.parametrize("batch,length", [(1, 5), (3, 7)])
def test_prefill_matches_the_numpy_reference(tiny_llama, reference, batch, length):
    m = weft.load_model(tiny_llama)
    w = reference.make_weights(batch * 10 + length)
    rng = np.random.default_rng(length)
    tokens = rng.integers(0, reference.VOCAB, size=(batch, length))
    want_logits, want_cache = reference.forward(w, tokens, 0, None)
    assert np.std(want_logits) > 0.1, "trivial reference logits"
    assert len(np.unique(tokens)) > 1, "trivial tokens"
    got = m.run(dict(w, tokens=tokens, pos=0), function="prefill")
    assert isinstance(got, tuple) and len(got) == 1 + 2 * reference.LAYERS
    assert all(isinstance(g, np.ndarray) and g.dtype == np.float32 for g in got)
    logits = got[0]
    assert logits.shape == (batch, length, reference.VOCAB)
    scale = max(1.0, np.max(np.abs(want_logits)))
    assert np.max(np.abs(logits - want_logits)) / scale < 2e-4
    for layer in range(reference.LAYERS):  # weft's cache is [b, kv heads, positions, head dim]
        k, v = want_cache[layer]
        np.testing.assert_allclose(got[1 + 2 * layer], k.transpose(0, 2, 1, 3), atol=2e-4)
        np.testing.assert_allclose(got[2 + 2 * layer], v.transpose(0, 2, 1, 3), atol=2e-4)
    # Positional arguments in parameter order give the same result; f64 results are closer.
    order = [p.name for p in m.params("prefill")]
    given = dict(w, tokens=tokens, pos=0)
    positional = m.run([given[n] for n in order], function="prefill", dtype="f64")
    assert positional[0].dtype == np.float64
    assert np.max(np.abs(positional[0] - want_logits)) / scale < 1e-5


def test_decode_grows_the_cache(tiny_llama, reference):
    m = weft.load_model(tiny_llama)
    w = reference.make_weights(3)
    tokens = np.random.default_rng(4).integers(0, reference.VOCAB, size=(2, 5))
    want_all, _ = reference.forward(w, tokens, 0, None)
    out = m.run(dict(w, tokens=tokens[:, :4], pos=0), function="prefill")
    step = m.run(dict(w, tokens=tokens[:, 4:], pos=np.int64(4), kc0=out[1], vc0=out[2],
                      kc1=out[3], vc1=out[4]), function="decode")
    assert step[1].shape == (2, 2, 5, 16)
    np.testing.assert_allclose(step[0], want_all[:, 4:], atol=2e-4 * np.max(np.abs(want_all)))


def test_compiled_ugraphs_match_the_interpreter(root, tmp_path):
    m = weft.load_model(root / "tests" / "model" / "ugraph_call.wmod")
    rng = np.random.default_rng(7)
    args = {"x": rng.standard_normal((4, 32)), "w": rng.standard_normal((4, 32)),
            "w2": rng.standard_normal((32, 16)), "v": rng.standard_normal((3, 4, 32)) * 0.5}
    want = m.run(args)
    assert np.std(want[0]) > 0.1 and np.std(want[1]) > 0.1
    compiled = m.compile(target="cpu", cache_dir=tmp_path / "cache")
    got = compiled(**args)
    assert [g.shape for g in got] == [(4, 16), (3, 4, 32)]
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4)
    got_positional = compiled(args["x"], args["w"], args["w2"], args["v"])
    np.testing.assert_array_equal(got_positional[0], got[0])
    with pytest.raises(weft.UserError, match="CPU only"):
        m.compile(target="h100")


def test_bad_models_raise_located_user_errors(root):
    # Every file of the bad-model corpus opens with "# expect: LINE:COL: message".
    files = sorted((root / "tests" / "bad_model").glob("*.wmod"))
    assert len(files) > 10
    for path in files:
        first = path.read_bytes().split(b"\n", 1)[0].decode("utf-8", "replace")
        expect = re.match(r"# expect: (\d+):(\d+): (.*)", first)
        if expect is None:
            continue
        with pytest.raises(weft.UserError) as info:
            weft.load_model(path)
        e = info.value
        assert e.file is not None and e.file.endswith(path.name), (path, e)
        assert (e.line, e.column) == (int(expect[1]), int(expect[2])), (path, str(e))
        assert expect[3] in e.message, (path, str(e))
        assert str(e).startswith(f"{e.file}:{e.line}:{e.column}: error:")


def test_match_cast_mismatch_at_run_time_names_the_variable(tmp_path):
    path = tmp_path / "cast.wmod"
    path.write_text("sym n, m\n"
                    "fn main(x: f32[n, 4], y: f32[ndim=2]) -> f32[n, 4] {\n"
                    "  z = match_cast(y, f32[n, 4])\n"
                    "  dataflow {\n"
                    "    s = add(x, z)\n"
                    "  }\n"
                    "  return s\n"
                    "}\n")
    m = weft.load_model(path)
    x, y = np.arange(12.0).reshape(3, 4), np.ones((3, 4))
    np.testing.assert_array_equal(m.run({"x": x, "y": y}), x + 1)
    with pytest.raises(weft.UserError) as info:
        m.run({"x": x, "y": np.ones((5, 4))})
    e = info.value
    assert (e.file, e.line, e.column) == (str(path), 3, 7)
    assert "match_cast of 'y'" in e.message and "n = 3" in e.message


def test_integer_and_bool_results_come_back_in_their_types(tmp_path):
    path = tmp_path / "ints.wmod"
    path.write_text("sym n\n"
                    "fn main(ids: i64[n], x: f32[n]) -> tuple(i64[n], bool[n], f32[n]) {\n"
                    "  dataflow {\n"
                    "    twice = add(ids, ids)\n"
                    "    low = less(ids, twice)\n"
                    "    kept = where(low, x, x)\n"
                    "    r = tuple(twice, low, kept)\n"
                    "  }\n"
                    "  return r\n"
                    "}\n")
    m = weft.load_model(path)
    big = 2 ** 40 + 1  # no float32 value: an f32 path would round it
    twice, low, kept = m.run({"ids": np.array([big, -3, 0]), "x": np.array([0.5, 1.5, 2.5])})
    assert twice.dtype == np.int64 and low.dtype == np.bool_ and kept.dtype == np.float32
    np.testing.assert_array_equal(twice, [2 * big, -6, 0])
    np.testing.assert_array_equal(low, [True, False, False])
    with pytest.raises(weft.UserError) as info:
        m.run({"ids": np.array([1.5, 2.0, 3.0]), "x": np.zeros(3)})
    assert "parameter 'ids' is i64" in info.value.message


def test_argument_errors(tiny_llama, reference):
    m = weft.load_model(tiny_llama)
    w = reference.make_weights(0)
    tokens = np.zeros((1, 2), dtype=np.int64)
    with pytest.raises(weft.UserError, match="no function 'main'.*prefill"):
        m.run(dict(w, tokens=tokens, pos=0))
    with pytest.raises(weft.UserError, match="missing argument: pos"):
        m.run(dict(w, tokens=tokens), function="prefill")
    with pytest.raises(weft.UserError, match="argument 'pos' must be an integer scalar"):
        m.run(dict(w, tokens=tokens, pos=0.5), function="prefill")
    with pytest.raises(weft.UserError, match="has no argument 'bogus'"):
        m.run(dict(w, tokens=tokens, pos=0, bogus=1), function="prefill")


def test_a_missing_onnx_file_is_a_located_user_error(tmp_path):
    # Imported when weft has ONNX import (tests/python/test_compile_model.py), else a UserError
    # saying it has none: either way located at the file.
    with pytest.raises(weft.UserError) as info:
        weft.load_model(tmp_path / "model.onnx")
    assert info.value.file == str(tmp_path / "model.onnx")


def test_missing_file_is_a_user_error(tmp_path):
    with pytest.raises(weft.UserError):
        weft.load_model(tmp_path / "absent.wmod")


def test_compiled_greedy_decode_of_a_wmod_step_matches_the_numpy_reference(tiny_llama, reference,
                                                                           tmp_path):
    """``CompiledModelDir.decode`` on a .wmod step that takes its cache's length as ``int(p)``
    (tiny_llama's ``decode``, the prompt through ``prefill``): the tokens of the NumPy reference's
    own greedy loop (the persistent kernel's: tests/model_decode_test.cpp)."""
    w = reference.make_weights(3)
    prompt = np.array([5, 17, 99, 42])
    want, cache, logits = [], None, None
    logits, cache = reference.forward(w, prompt[None], 0, None)
    for step in range(8):
        want.append(int(logits[0, -1].argmax()))
        logits, cache = reference.forward(w, np.array([[want[-1]]]), len(prompt) + step, cache)
    assert len(set(want)) >= 3, f"the reference decode must not be trivial: {want}"
    d = weft.compile_model(tiny_llama, tmp_path / "tl", [{"b": 1, "n": 4, "p": 0},
                                                        {"b": 1, "n": 1, "p": 4}],
                           target="h100", time_budget=2, progress=False, build=False)
    got = d.decode(prompt, tokens=8, function="decode", backend="interp", weights=w)
    assert got["tokens"] == want
    assert got["compiled_steps"] == 2, "the prompt and the first step ran at compiled bindings"
    assert "changes every step" in got["note"]
    with pytest.raises(weft.UserError, match="give them with --weights"):
        d.decode(prompt, tokens=2, function="decode", backend="interp")
    with pytest.raises(weft.UserError, match="no attention mask"):
        d.decode(prompt, tokens=2, function="decode", backend="interp", weights=w, capacity=8)
    with pytest.raises(weft.UserError, match="no function 'first'"):
        d.decode(prompt, tokens=2, function="decode", prefill="first", weights=w)
