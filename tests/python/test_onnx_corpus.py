"""The corpus of real exporter output (examples/onnx/corpus) through weft, held to onnxruntime's references and to the expected state in status.json, strictly both ways."""
# Each model goes through `weft model check`, then `weft model run` at each reference shape, then
# (decoders with a KV cache) a 32-token greedy loop on `weft model run`, then `weft compile` at its
# first reference's shapes and `weft run DIR` at every reference; each stage only after the one
# before it passed. status.json says, per model and stage, what must happen: "matches", or the
# exact blockers (the set of unsupported operator types `model check` lists, or a part of the
# error message). A model that does better than its entry fails too, naming the stage, so the
# entry is updated when an operator lands and the next engineer sees what changed.
# scripts/onnx_corpus.py writes the models and references (`make onnx-corpus`; torch is not needed
# here).
import json
import pathlib
import re
import subprocess

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the test oracles: `make python` installs tests/python/requirements.txt")
import onnx_harness as h  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "examples" / "onnx" / "corpus"
RTOL, ATOL = 1e-3, 1e-4
STAGES = ("import", "run", "greedy", "compile")  # greedy: decoders with a KV cache only


def load_json(name):
    return json.loads((CORPUS / name).read_text())


MODELS = load_json("models.json")["models"]
STATUS = load_json("status.json")["models"]
EXPORTED = sorted(n for n, e in MODELS.items() if "export_error" not in e)


def unsupported_ops(stderr):
    """The operator types weft names as unsupported: its listing (a line `  OpType: N nodes, first
    node ...` each) or, when one node is unsupported, the one-line message naming it."""
    listed = re.findall(r"^\s+(\S+): \d+ nodes?, first node", stderr, re.M)
    if listed:
        return sorted(listed)
    return sorted(set(re.findall(r"operator '([^']+)' is (?:not supported by weft|supported, but not at opset)",
                                 stderr)))


def references(entry):
    """(label, inputs, outputs) per reference file."""
    out = []
    for ref in entry["references"]:
        with np.load(CORPUS / ref["file"]) as z:
            ins = {k[len("input."):]: z[k] for k in z.files if k.startswith("input.")}
            outs = {k[len("output."):]: z[k] for k in z.files if k.startswith("output.")}
        out.append((ref["shape"], ins, outs))
    return out


def bound_args(entry):
    return [a for k, v in entry["bounds"].items() for a in ("--bound", f"{k}={v}")]


def run(cmd, timeout=600):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout)


class Outcome:
    """What one stage did: ok (and matched, where it compares), or the error text."""

    def __init__(self, ok, text=""):
        self.ok, self.text = ok, text


def judge(name, stage, expected, outcome):
    """Fails unless the outcome is what status.json expects of the stage: "ok"/"matches", or
    {"unsupported": [...]} (exactly those operator types), {"error": "text"} (a failure whose
    message contains it), {"mismatch": true} (runs but differs from the reference)."""
    where = f"{name} ({stage})"
    assert expected is not None, f"{where}: status.json gives no expectation for this stage"
    if expected in ("ok", "matches"):
        assert outcome.ok, f"{where}: status.json says {expected!r}, but: {outcome.text[-3000:]}"
        return
    assert not outcome.ok, (f"{where} now passes; status.json still expects {expected}: update "
                            "examples/onnx/corpus/status.json (it got better)")
    if "unsupported" in expected:
        got = unsupported_ops(outcome.text)
        assert got == sorted(expected["unsupported"]), (
            f"{where}: unsupported operators are now {got}, status.json lists {sorted(expected['unsupported'])}: "
            f"update it. weft said: {outcome.text[-2000:]}")
    elif "error" in expected:
        assert expected["error"] in outcome.text, (
            f"{where}: expected an error containing {expected['error']!r}; got: {outcome.text[-2000:]}")
    else:
        assert expected.get("mismatch"), f"{where}: unknown expectation {expected!r} in status.json"
        assert "differ" in outcome.text, f"{where}: expected a mismatch, got: {outcome.text[-2000:]}"


def compare(expected, got):
    bad = [m for out, ref in expected.items() if (m := h.mismatch(out, got.get(out), ref, RTOL, ATOL))]
    return Outcome(not bad, "; ".join(bad))


def run_at_references(cmd, entry, tmp_path, what):
    """`cmd --inputs IN.npz --outputs OUT.npz` at every reference: the first failure, or ok when
    all match."""
    for label, ins, outs in references(entry):
        np.savez(tmp_path / "in.npz", **ins)
        r = run([*cmd, "--inputs", tmp_path / "in.npz", "--outputs", tmp_path / "out.npz"])
        if r.returncode != 0:
            return Outcome(False, f"{what} at {label}: exit {r.returncode}: {r.stderr}")
        with np.load(tmp_path / "out.npz") as z:
            c = compare(outs, {k: z[k] for k in z.files})
        if not c.ok:
            return Outcome(False, f"{what} at {label}: outputs differ: {c.text}")
    return Outcome(True)


def greedy_decode(weft, path, entry, tmp_path):
    """The decoder's greedy loop on `weft model run`, one token a step with present.* fed back as
    past_key_values.*, from the first step of the reference decode; its tokens must be onnxruntime's."""
    with np.load(CORPUS / entry["greedy"]["file"]) as z:
        feeds = {k[len("input."):]: z[k] for k in z.files if k.startswith("input.")}
        want = [int(t) for t in z["tokens"]]
    pasts = [n for n in entry["inputs"] if n.startswith("past_key_values.")]
    presents = [n for n in entry["outputs"] if n.startswith("present.")]
    tokens = []
    for step in range(len(want)):
        np.savez(tmp_path / "in.npz", **feeds)
        r = run([weft, "model", "run", path, "--inputs", tmp_path / "in.npz", "--outputs", tmp_path / "out.npz",
                 *bound_args(entry)])
        if r.returncode != 0:
            return Outcome(False, f"greedy step {step}: exit {r.returncode}: {r.stderr}")
        with np.load(tmp_path / "out.npz") as z:
            out = {k: z[k] for k in z.files}
        tokens.append(int(out["logits"][0, -1].argmax()))
        past = feeds["attention_mask"].shape[1]
        feeds = {"input_ids": np.array([[tokens[-1]]], np.int64), "attention_mask": np.ones((1, past + 1), np.int64),
                 "position_ids": np.array([[past]], np.int64), **{p: out[q] for p, q in zip(pasts, presents)}}
    return Outcome(tokens == want, f"greedy tokens differ: weft {tokens}, onnxruntime {want}")


def compile_and_run(weft, path, entry, tmp_path):
    """`weft compile` bound to the first reference's shapes (a fixed model: no --bind), then
    `weft run DIR` at every reference (and for a decoder with its cache, `weft decode DIR`)."""
    bind = h.dims_binding(path, references(entry)[0][1])
    out_dir = tmp_path / "compiled"
    cmd = [weft, "compile", path, "-o", out_dir, "--time-budget", "4", "--cache", tmp_path / "cache",
           *bound_args(entry)]
    r = run(cmd + (["--bind", bind] if bind else []))
    if r.returncode != 0:
        return Outcome(False, f"weft compile: exit {r.returncode}: {r.stderr}")
    ran = run_at_references([weft, "run", out_dir], entry, tmp_path, "weft run DIR")
    if not ran.ok or "greedy" not in entry:
        return ran
    return decode_compiled(weft, out_dir, entry)


def decode_compiled(weft, out_dir, entry):
    """A decoder with its cache: `weft decode DIR --capacity C` at the compiled binding's cache
    length C (the prompt fed a token a step, slots masked until filled) chooses onnxruntime's
    tokens, as many as C slots hold."""
    with np.load(CORPUS / entry["greedy"]["file"]) as z:
        prompt = [int(t) for t in z["prompt"]]
        want = [int(z["prompt_token"][0])] + [int(t) for t in z["tokens"]]
    past = next(v for k, v in references(entry)[0][1].items() if k.startswith("past_key_values."))
    capacity = past.shape[2]
    tokens = capacity + 2 - len(prompt)
    r = run([weft, "decode", out_dir, "--prompt", ",".join(map(str, prompt)), "--tokens", str(tokens),
             "--capacity", str(capacity)])
    if r.returncode != 0:
        return Outcome(False, f"weft decode DIR: exit {r.returncode}: {r.stderr}")
    got = [int(t) for t in r.stdout.strip().split(",")]
    return Outcome(got == want[:tokens], f"weft decode DIR: tokens {got}, onnxruntime {want[:tokens]}")


def test_status_covers_every_exported_model():
    assert sorted(STATUS) == EXPORTED, "examples/onnx/corpus/status.json must have one entry per exported model"
    for name, st in STATUS.items():
        assert set(st) <= set(STAGES), f"{name}: stages are {STAGES}"
        assert "import" in st, name
        # Each stage runs only after the one before it passed: after a blocked stage, none is listed.
        stages = [s for s in STAGES if s != "greedy" or "greedy" in MODELS[name]]
        listed = [s for s in stages if s in st]
        assert listed == stages[:len(listed)], f"{name}: stages {listed} skip one of {stages}"
        assert all(st[s] in ("ok", "matches") for s in listed[:-1]), f"{name}: a stage after a blocked one"


def test_corpus_files_are_small_and_referenced():
    total = 0
    for name in EXPORTED:
        entry = MODELS[name]
        for f in entry["files"]:
            size = (CORPUS / f).stat().st_size
            assert size < 2 << 20, f"{f}: {size} bytes (the corpus keeps each file under 2 MB)"
            total += size
        assert len(entry["references"]) == (2 if entry["dynamic"] else 1), name
        for ref in entry["references"]:
            total += (CORPUS / ref["file"]).stat().st_size
    assert total < 20 << 20, f"the corpus is {total} bytes"
    for kind in ("classic", "dynamo"):
        assert any(MODELS[n]["exporter"] == kind for n in EXPORTED), f"no {kind} export in the corpus"
    assert any(f.endswith(".onnx.data") for n in EXPORTED for f in MODELS[n]["files"]), "no external data model"


@pytest.mark.onnx_corpus
@pytest.mark.parametrize("name", EXPORTED)
def test_corpus_model(name, weft_onnx, tmp_path):
    entry, st = MODELS[name], STATUS[name]
    path = CORPUS / f"{name}.onnx"
    r = run([weft_onnx, "model", "check", path, *bound_args(entry)])
    judge(name, "import", st["import"], Outcome(r.returncode == 0, r.stderr))
    if r.returncode != 0:
        assert r.returncode == 1 and "error:" in r.stderr, f"{name}: a failed import is a user error: {r.stderr}"
        return
    outcome = run_at_references([weft_onnx, "model", "run", path, *bound_args(entry)], entry, tmp_path,
                                "weft model run")
    judge(name, "run", st.get("run"), outcome)
    if not outcome.ok:
        return
    if "greedy" in entry:
        outcome = greedy_decode(weft_onnx, path, entry, tmp_path)
        judge(name, "greedy", st.get("greedy"), outcome)
        if not outcome.ok:
            return
    judge(name, "compile", st.get("compile"), compile_and_run(weft_onnx, path, entry, tmp_path))


@pytest.mark.parametrize("perturb", [False, True], ids=["correct", "outputs_times_1.01"])
def test_the_stages_pass_a_correct_backend_and_fail_a_wrong_one(perturb, fake_weft, tmp_path, monkeypatch):
    """The run and greedy stages through a stand-in weft backed by onnxruntime: they pass it, and
    the run stage catches outputs scaled by 1.01, so their verdicts on weft are weft's."""
    pytest.importorskip("onnxruntime", reason="the test oracles: `make python` installs tests/python/requirements.txt")
    name = "llama_kv_dynamo_dynamic"
    entry, path = MODELS[name], CORPUS / f"{name}.onnx"
    monkeypatch.setenv("FAKE_WEFT_PERTURB", "1" if perturb else "")
    ran = run_at_references([fake_weft, "model", "run", path, *bound_args(entry)], entry, tmp_path, "fake weft")
    assert ran.ok != perturb, ran.text
    if not perturb:
        greedy = greedy_decode(fake_weft, path, entry, tmp_path)
        assert greedy.ok, greedy.text


@pytest.mark.onnx_corpus
@pytest.mark.parametrize("name", ["bert_classic_dynamic", "gpt2_dynamo_dynamic", "resnet_classic_dynamic"])
def test_no_bound_needed(name, weft_onnx, tmp_path):
    """As a user first tries an export, with no --bound: `weft model run` at every reference (memory
    planned for the inputs given; a dim the model limits, such as a position table's, narrowed to
    its limit), then `weft compile` at the first reference's shapes and `weft run DIR` at every
    reference, other shapes included."""
    entry, path = MODELS[name], CORPUS / f"{name}.onnx"
    outcome = run_at_references([weft_onnx, "model", "run", path], entry, tmp_path, "weft model run")
    assert outcome.ok, outcome.text
    first = references(entry)[0][1]
    bind = h.dims_binding(path, first)
    out_dir = tmp_path / "compiled"
    r = run([weft_onnx, "compile", path, "-o", out_dir, "--time-budget", "4", "--no-cache", "--bind", bind])
    assert r.returncode == 0, r.stderr
    if entry["architecture"] == "bert":  # its position table is sliced at seq (GPT-2 gathers from it)
        assert re.search(r"note: .*seq is bounded by \d+, not 4096", r.stderr), r.stderr
    outcome = run_at_references([weft_onnx, "run", out_dir], entry, tmp_path, "weft run DIR")
    assert outcome.ok, outcome.text
    # --threads (one cap for weft's kernels and the CPU library) changes no answer.
    outcome = run_at_references([weft_onnx, "run", out_dir, "--threads", "1"], entry, tmp_path,
                                "weft run DIR --threads 1")
    assert outcome.ok, outcome.text
    r = run([weft_onnx, "run", out_dir, "--threads", "-1"])
    assert r.returncode != 0 and "--threads" in r.stderr, r.stderr
    # Never a silent slowdown: a binding the directory was not compiled at says so, once.
    for i, (label, ins, _) in enumerate(references(entry)):
        np.savez(tmp_path / "in.npz", **ins)
        r = run([weft_onnx, "run", out_dir, "--inputs", tmp_path / "in.npz", "--outputs", tmp_path / "out.npz"])
        assert r.returncode == 0, r.stderr
        assert r.stderr.count("runs on the per-operator path") == (1 if i else 0), f"{label}: {r.stderr}"


@pytest.mark.onnx_corpus
@pytest.mark.parametrize("name", ["bert_classic_dynamic", "gpt2_dynamo_dynamic", "llama_classic_dynamic"])
def test_compile_with_rewrites(name, weft_onnx, tmp_path):
    """`weft compile` (its default rewrite, the e-graph): the generated rules rewrite these
    exports (the scaled q and k of attention become one scaling, issue 31), and `weft run DIR`
    still matches onnxruntime at every reference."""
    path = CORPUS / f"{name}.onnx"
    entry = MODELS[name]
    bind = h.dims_binding(path, references(entry)[0][1])
    out_dir = tmp_path / "compiled"
    r = run([weft_onnx, "compile", path, "-o", out_dir, "--time-budget", "4", "--no-cache",
             *bound_args(entry), *(["--bind", bind] if bind else [])])
    assert r.returncode == 0, r.stderr
    summary = json.loads((out_dir / "summary.json").read_text())
    assert sum(len(f["rewrites"]) for f in summary["rewrite"]) >= 1, summary["rewrite"]
    assert all(f["kernels_after"] < f["kernels_before"] for f in summary["rewrite"])
    outcome = run_at_references([weft_onnx, "run", out_dir], entry, tmp_path, "weft run DIR")
    assert outcome.ok, outcome.text


def test_bench_with_onnxruntime_as_peer(weft_onnx, tmp_path):
    """`weft bench DIR --peer onnxruntime` times onnxruntime on the same inputs in the same run
    (issue 30): with the test venv's Python (which has it) both times and their ratio print; with
    a Python where onnxruntime cannot be imported, a clear error says how to get it."""
    import os
    import sys

    name = "resnet_classic_dynamic"
    entry, path = MODELS[name], CORPUS / f"{name}.onnx"
    label, ins, _ = references(entry)[0]
    np.savez(tmp_path / "in.npz", **ins)
    out_dir = tmp_path / "compiled"
    r = run([weft_onnx, "compile", path, "-o", out_dir, "--time-budget", "2", "--no-cache",
             "--bind", h.dims_binding(path, ins)])
    assert r.returncode == 0, r.stderr
    bench = [weft_onnx, "bench", out_dir, "--inputs", tmp_path / "in.npz", "--peer", "onnxruntime",
             "--peer-threads", "1", "--reps", "2"]
    env = dict(os.environ, WEFT_PYTHON=sys.executable)
    r = subprocess.run([str(c) for c in bench], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    m = re.search(r"peer: onnxruntime [\d.]+ \(CPU, 1 thread\)\s+([\d.]+) ms\s+\(weft compiled takes ([\d.]+)x", r.stdout)
    assert m and float(m.group(1)) > 0 and float(m.group(2)) > 0, r.stdout
    # --threads caps weft (its kernels and the CPU library) and, unless told apart, the peer.
    one = [str(c) for c in bench if str(c) not in ("--peer-threads", "1")] + ["--threads", "1"]
    r = subprocess.run(one, capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "warm-up; 1 thread;" in r.stdout, r.stdout
    assert re.search(r"peer: onnxruntime [\d.]+ \(CPU, 1 thread\)", r.stdout), r.stdout
    blocked = tmp_path / "blocked" / "onnxruntime"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text("raise ImportError('blocked by the test', name='onnxruntime')\n")
    env["PYTHONPATH"] = str(tmp_path / "blocked")
    r = subprocess.run([str(c) for c in bench], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 1, r.stdout
    assert "onnxruntime peer: onnxruntime: not installed for" in r.stderr, r.stderr


@pytest.mark.onnx_corpus
def test_compile_without_bind(weft_onnx, tmp_path):
    """A dynamic model compiled with no --bind is written unspecialized, says how to add shapes, and
    runs at every reference; a fixed one is specialized at its one shape (`--bind ''` says the same)."""
    name = "resnet_classic_dynamic"
    entry, path = MODELS[name], CORPUS / f"{name}.onnx"
    out_dir = tmp_path / "unspecialized"
    r = run([weft_onnx, "compile", path, "-o", out_dir, "--no-cache", *bound_args(entry)])
    assert r.returncode == 0, r.stderr
    assert "runs every shape on the per-operator path; add superoptimized shapes with --bind batch=N" in r.stderr
    outcome = run_at_references([weft_onnx, "run", out_dir], entry, tmp_path, "weft run DIR")
    assert outcome.ok, outcome.text
    fixed = CORPUS / "resnet_dynamo_fixed.onnx"
    for bind in ([], ["--bind", ""]):
        r = run([weft_onnx, "compile", fixed, "-o", tmp_path / "fixed", "--no-cache", *bind,
                 "--print-after", "specialize"])
        assert r.returncode == 0, r.stderr
        assert "main.fixed" in r.stdout and "not specialized" not in r.stderr, r.stderr
