"""weft.optimize and python -m weft optimize: the same results as the CLI, progress, interrupts."""

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

import weft

# The driver tests' deterministic configuration for silu_linear_tiny: one thread, a state budget
# and no time budget (about 0.3 s of search).
FLAGS = ["--threads", "1", "--states", "200000", "--time-budget", "0"]
KEYWORDS = dict(threads=1, state_budget=200000, time_budget=0)


def run_cli(args, cwd):
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300)


def test_python_and_cli_give_byte_identical_results(tmp_path, data, weft_binary):
    src = data("silu_linear_tiny.weft")
    (tmp_path / "cli").mkdir()
    cli = run_cli([weft_binary, "optimize", str(src), "--quiet", *FLAGS, "-o", "out"],
                  tmp_path / "cli")
    assert cli.returncode == 0, cli.stderr

    program = weft.load(src)
    r = weft.optimize(program, progress=False, **KEYWORDS)
    assert r.stop_reason == "state budget"
    assert r.best is not None and len(r.top) >= 1
    cli_best = (tmp_path / "cli" / "out" / "best.weft").read_text()
    # The µGraph itself, and the file around it, byte for byte.
    assert cli_best.endswith(str(r.best))
    assert weft.load(tmp_path / "cli" / "out" / "best.weft") == r.best
    assert r.candidate_text(1) == cli_best
    r.save(tmp_path / "py")
    for name in ["best.weft", "summary.json"] + [f"top-{i + 1}.weft" for i in range(len(r.top))]:
        assert (tmp_path / "py" / name).read_bytes() == \
            (tmp_path / "cli" / "out" / name).read_bytes(), name
    assert "kernel(" in str(r.best)  # a fused µGraph, not the input program
    assert r.speedup == pytest.approx(r.input_predicted_us / r.predicted_us)
    assert r.speedup > 1
    assert r.error_bound_log2 <= -60
    assert r.stats["states"] > 0
    assert r.stats["config"]["threads"] == 1
    assert weft.verify(program, r.best, threads=1).equivalent


def test_python_module_mirrors_the_cli(tmp_path, data, weft_binary):
    src = data("silu_linear_tiny.weft")
    (tmp_path / "cli").mkdir()
    (tmp_path / "py").mkdir()
    cli = run_cli([weft_binary, "optimize", str(src), "--quiet", *FLAGS, "-o", "out"],
                  tmp_path / "cli")
    py = run_cli([sys.executable, "-m", "weft", "optimize", str(src), "--quiet", *FLAGS,
                  "-o", "out"], tmp_path / "py")
    assert (cli.returncode, py.returncode) == (0, 0), py.stderr
    for name in ["best.weft", "summary.json"]:
        assert (tmp_path / "py" / "out" / name).read_bytes() == \
            (tmp_path / "cli" / "out" / name).read_bytes(), name

    def steady(text):  # the summary less its wall-clock figures (seconds, resident memory)
        return [line for line in text.splitlines()
                if not line.startswith(("  search:", "  memory:"))]
    assert steady(py.stdout) == steady(cli.stdout)
    assert "best µGraph" in py.stdout

    # Bad flags and files: the CLI's messages and exit code.
    bad = run_cli([sys.executable, "-m", "weft", "optimize", str(src), "--top-k", "0"], tmp_path)
    assert bad.returncode == 1 and "--top-k must be a positive integer, got 0" in bad.stderr
    missing = run_cli([sys.executable, "-m", "weft", "optimize", "nope.weft"], tmp_path)
    assert missing.returncode == 1 and missing.stderr.startswith("nope.weft: error:")


def test_progress_line_on_request(tmp_path, data):
    py = run_cli([sys.executable, "-m", "weft", "optimize", str(data("silu_linear_tiny.weft")),
                  "--progress", *FLAGS, "-o", "out"], tmp_path)
    assert py.returncode == 0, py.stderr
    assert "states" in py.stderr and "candidates" in py.stderr


def test_options_are_checked():
    p = weft.parse("input X: f16[4, 16]\nY = exp(X)\noutput Y\n")
    with pytest.raises(weft.UserError, match="top_k must be a positive integer"):
        weft.optimize(p, top_k=0, progress=False)
    with pytest.raises(weft.UserError, match="unknown option 'budget'"):
        weft.optimize(p, budget=3, progress=False)
    with pytest.raises(weft.UserError, match="target"):
        weft.optimize(p, target="tpu", progress=False)


def test_baselines_seed_searches_the_rules_neighbourhoods():
    # A softmax fused by rule beside a library matmul: the softmax alone, and with the matmul,
    # are handed back to the search (search/seed_neighbourhoods.h).
    p = weft.parse("input X: f16[16, 64]\ninput W: f16[64, 32]\ninput Y: f16[16, 32]\n"
                   "A = exp(X)\nS = sum(A, dim=1)\nN = div(A, S)\nM = matmul(N, W)\n"
                   "E = add(M, Y)\noutput E\n")
    keywords = dict(threads=2, state_budget=20000, time_budget=0, top_k=1, max_kernel_ops=2,
                    max_block_ops=6, max_grid_dims=1, partition=False)
    seeded = weft.optimize(p, progress=False, baselines="seed", **keywords)
    on = weft.optimize(p, progress=False, **keywords)
    assert seeded.stats["config"]["baselines"] == "seed"
    assert len(seeded.stats["seeds"]) > 0
    assert all(s["baseline"].startswith("seed:") for s in seeded.stats["seeds"])
    assert "seeds" not in on.stats
    assert seeded.predicted_us <= on.predicted_us * (1 + 1e-9)


def test_a_progress_callable_sees_search_and_verification(data):
    reports = []
    r = weft.optimize(weft.load(data("silu_linear_tiny.weft")), progress=reports.append,
                      **KEYWORDS)
    assert r.best is not None
    phases = [p.phase for p in reports]
    assert "search" in phases and "verify" in phases
    done = [p for p in reports if p.phase == "search" and p.search_done]
    assert len(done) == 1 and done[0].states == r.stats["states"]
    assert "states" in done[0].line


def test_an_exception_in_the_progress_callable_is_raised(data):
    def progress(p):
        raise ValueError("from the callback")
    with pytest.raises(ValueError, match="from the callback"):
        weft.optimize(weft.load(data("silu_linear_tiny.weft")), progress=progress, **KEYWORDS)


def test_keyboard_interrupt_from_the_callback_returns_what_was_found(data):
    program = weft.load(data("silu_linear_tiny.weft"))

    def progress(p):
        if p.phase == "search" and p.candidates > 0:
            raise KeyboardInterrupt
    start = time.monotonic()
    r = weft.optimize(program, time_budget=120, threads=1, progress=progress)
    assert time.monotonic() - start < 60
    assert r.stop_reason == "interrupted" and r.interrupted
    assert r.best is not None and weft.verify(program, r.best, threads=1).equivalent


def test_sigint_stops_the_search_and_returns_what_was_found(data):
    program = weft.load(data("silu_linear_tiny.weft"))
    # Python leaves SIGINT ignored when it starts with it ignored (as a background job `cmd &` of
    # a non-interactive shell does): give it Python's handler, as in a terminal.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(1.5, os.kill, (os.getpid(), signal.SIGINT))
    start = time.monotonic()
    timer.start()
    try:
        r = weft.optimize(program, time_budget=120, threads=2, progress=False)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - start < 60
    assert r.stop_reason == "interrupted"
    assert r.stats["states"] > 0
    assert r.best is not None and weft.verify(program, r.best, threads=1).equivalent
