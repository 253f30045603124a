"""weft.megakernel: a program's task graph compiled and run from Python (on host threads; the
emulated persistent kernel is the C++ suites' MpkMegakernel*), its steps' text, and the errors a
caller meets."""

import re

import numpy as np
import pytest

import weft


@pytest.fixture
def fork(root):
    return weft.load(root / "tests" / "golden" / "mpk" / "fork.weft")


def test_compile_gives_a_verified_task_graph_with_its_counts(fork):
    mk = weft.megakernel.compile(fork, workers=3, data_dependent_reads="X")
    s = mk.summary
    assert s["name"] == "fork" and s["platform"] == "host" and s["target"] == "cpu"
    assert s["decoder"] is False
    assert s["tasks"] > 0 and s["events"] > 0 and s["workers"] == 3 and s["blob_bytes"] > 0
    assert s["jit_tasks"] > 0, "the kernels reading X are dispatched just in time"
    assert mk.task_graph.startswith("tgraph fork workers=3 dispatch=hybrid\n")
    assert [n for n, _ in mk.inputs] == [i.name for i in fork.inputs]


def test_a_run_matches_the_reference_and_the_interpreter(fork):
    mk = weft.megakernel.compile(fork, workers=2)
    rng = np.random.default_rng(7)
    inputs = [rng.uniform(-1, 1, shape).astype(np.float32) for _, shape in mk.inputs]
    assert all(np.abs(x).max() > 0.1 for x in inputs), "trivial inputs"
    r = mk.run(inputs, iterations=3, delay_seed=5, trace=True)
    assert r.same
    want = weft.run(fork, inputs)
    assert len(r.outputs) == len(want)
    for got, expected in zip(r.outputs, want):
        assert np.abs(expected).max() > 0, "trivial outputs"
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    assert '"traceEvents"' in r.trace
    seeded = mk.run()
    assert seeded.same and seeded.trace == ""


def test_steps_gives_the_text_after_each_compiler_step(fork):
    all_steps = weft.megakernel.steps(fork, workers=3)
    assert [name for name, _ in all_steps] == weft.megakernel.passes()
    assert all(text.startswith("tgraph fork") for _, text in all_steps)
    assert weft.megakernel.steps(fork, stop_after="deps")[-1][0] == "deps"
    with pytest.raises(weft.UserError, match=r"unknown MPK pass 'nope' \(passes: decompose"):
        weft.megakernel.steps(fork, stop_after="nope")


def test_errors_a_caller_meets(fork, example):
    with pytest.raises(weft.UserError, match="unknown platform 'tpu'"):
        weft.megakernel.compile(fork, platform="tpu")
    with pytest.raises(weft.UserError, match="must be a weft.Program"):
        weft.megakernel.compile("fork.weft")
    mk = weft.megakernel.compile(fork)
    with pytest.raises(weft.UserError, match="expected shape"):
        mk.run([np.zeros((1, 1), np.float32)] * len(mk.inputs))
    # A decode step without its declaration: refused before anything is built, saying how.
    text = example("tiny_decoder_step.weft").read_text()
    undeclared = weft.parse(re.sub(r"\ninterface decode\([^)]*\)", "", text))
    with pytest.raises(weft.UserError, match=r"declares no decode interface.*interface decode\("):
        weft.megakernel.compile(undeclared, platform="emulation", decode_loop=True)
    declared = weft.megakernel.compile(weft.parse(text), platform="emulation")
    assert declared.summary["decoder"] is True and declared.summary["target"] == "h100"
