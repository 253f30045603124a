"""ONNX's node tests (libonnx-testdata) of every operator weft declares supported, through scripts/onnx_node_tests.py."""
# The script is the one a person runs (its output is the table in docs/onnx.md); this test holds
# `make test` to it: every in-scope test passes or is listed in tests/data/onnx_node_exclusions.txt.
import os
import subprocess
import sys

import pytest

pytest.importorskip("onnx", reason="the test oracles: `make python` installs tests/python/requirements.txt")

NODE_DATA = "/usr/share/libonnx-testdata/data/node"


@pytest.mark.onnx_node
def test_node_tests_of_supported_operators(root, weft_onnx):
    assert os.path.isdir(NODE_DATA), f"{NODE_DATA}: libonnx-testdata missing (scripts/install-deps.sh installs it)"
    r = subprocess.run([sys.executable, str(root / "scripts" / "onnx_node_tests.py"), "--weft", weft_onnx],
                       capture_output=True, text=True, timeout=3600)
    print(r.stdout)
    print(r.stderr, file=sys.stderr)
    assert r.returncode == 0, "node tests failed:\n" + r.stderr[-6000:]
    assert "node tests in scope" in r.stderr
