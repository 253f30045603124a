"""Shared fixtures of the Python tests: paths into the checkout and the weft CLI binary."""

import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


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
