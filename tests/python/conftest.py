"""Shared fixtures of the Python tests: paths into the checkout, the weft CLI binary, whether it imports ONNX."""

import os
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
# scripts/onnx_harness.py runs ONNX models on weft or onnxruntime for the ONNX tests and scripts.
sys.path.insert(0, str(ROOT / "scripts"))


@pytest.fixture
def root():
    return ROOT


@pytest.fixture
def example():
    return lambda name: ROOT / "examples" / name


@pytest.fixture
def data():
    return lambda name: ROOT / "tests" / "data" / name


@pytest.fixture
def weft_binary():
    """The CLI: $WEFT_BINARY (set by `make test-python`, so a missing binary fails there), else
    build/weft when it exists; skipped otherwise."""
    given = os.environ.get("WEFT_BINARY")
    if given:
        assert os.access(given, os.X_OK), f"WEFT_BINARY={given} is not an executable"
        return os.path.abspath(given)
    default = ROOT / "build" / "weft"
    if not default.exists():
        pytest.skip("no weft CLI binary (build it with `make build` or set WEFT_BINARY)")
    return str(default)


@pytest.fixture
def weft_onnx(weft_binary):
    """The CLI when it imports ONNX models (`weft model onnx-ops` succeeds); skipped, with the
    reason, when this weft has no ONNX import."""
    from onnx_harness import weft_supports_onnx

    ok, why = weft_supports_onnx(weft_binary)
    if not ok:
        pytest.skip(why)
    return weft_binary


@pytest.fixture
def fake_weft(root, tmp_path):
    """A stand-in for the weft CLI backed by onnxruntime (onnx_fake_weft.py), to check the ONNX
    harnesses themselves: a pass must be weft's pass, a failure weft's failure."""
    path = tmp_path / "weft"
    path.write_text(f"#!/bin/sh\nexec {sys.executable} {root / 'tests' / 'python' / 'onnx_fake_weft.py'} \"$@\"\n")
    path.chmod(0o755)
    return str(path)


# Wall times the ONNX suites record (test_onnx_light.py: one per model and backend), printed at
# the end of the run so `make test-python` shows them.
WALL_TIMES = {}


def pytest_terminal_summary(terminalreporter):
    if WALL_TIMES:
        terminalreporter.section("ONNX wall times")
        for name, seconds in sorted(WALL_TIMES.items()):
            terminalreporter.write_line(f"{name:40} {seconds:8.2f} s")
