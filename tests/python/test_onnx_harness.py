"""The ONNX harnesses (scripts/onnx_node_tests.py, onnx_harness) pass a correct backend and fail a wrong one, using onnxruntime behind a fake weft CLI."""
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("onnxruntime", reason="the test oracles: `make python` installs tests/python/requirements.txt")
import onnx_harness as h  # noqa: E402

NODE_DATA = "/usr/share/libonnx-testdata/data/node"


def node_tests(root, binary, perturb, pattern):
    env = dict(os.environ, FAKE_WEFT_PERTURB="1" if perturb else "")
    return subprocess.run([sys.executable, str(root / "scripts" / "onnx_node_tests.py"), "--weft", binary,
                           "--exclusions", os.devnull, "-k", pattern], capture_output=True, text=True, env=env)


def test_node_test_script_passes_a_correct_backend_and_fails_a_wrong_one(root, fake_weft):
    assert os.path.isdir(NODE_DATA), f"{NODE_DATA}: libonnx-testdata missing (scripts/install-deps.sh installs it)"
    good = node_tests(root, fake_weft, False, "test_softmax")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "Softmax" in good.stdout and " 0 failed" in good.stderr
    bad = node_tests(root, fake_weft, True, "test_softmax")
    assert bad.returncode == 1 and "FAIL test_softmax" in bad.stderr, bad.stdout + bad.stderr


def test_support_detection(fake_weft, tmp_path):
    assert h.weft_supports_onnx(fake_weft) == (True, "")
    assert "Softmax" in h.weft_onnx_ops(fake_weft)
    other = tmp_path / "other"
    other.write_text("#!/bin/sh\necho 'unknown subcommand' >&2; exit 109\n")
    other.chmod(0o755)
    ok, why = h.weft_supports_onnx(str(other))
    assert not ok and "no ONNX import" in why
    ranged = tmp_path / "ranged"
    ranged.write_text("#!/bin/sh\n[ \"$1\" = onnx-ops ] || exit 109\nprintf 'Add 7 22\\nGelu 20+\\nRelu\\n'\n")
    ranged.chmod(0o755)
    assert h.weft_onnx_ops(str(ranged)) == {"Add": (7, 22), "Gelu": (20, None), "Relu": (None, None)}


def test_mismatch_reports():
    ref = np.array([[1.0, 2.0], [3.0, np.nan]], dtype=np.float32)
    assert h.mismatch("y", ref.copy(), ref, 1e-3, 1e-7) is None
    assert "3/4 elements differ" in h.mismatch("y", ref * np.float32(1.01), ref, 1e-3, 1e-7)
    assert "shape" in h.mismatch("y", ref[:1], ref, 1e-3, 1e-7)
    assert "missing" in h.mismatch("y", None, ref, 1e-3, 1e-7)
    ints = np.array([3, 2**40 + 1], dtype=np.int64)
    assert h.mismatch("i", ints.astype(np.float32), ints, 1e-3, 1e-7) is not None  # f32 rounds 2**40+1
    assert h.mismatch("i", ints.astype(np.float64), ints, 1e-3, 1e-7) is None
