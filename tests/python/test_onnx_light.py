"""The light models of the onnx package (ResNet-50, SqueezeNet, Inception, ...) on weft against their reference outputs."""
# Inputs as ONNX's backend runner makes them (generate_dummy_data, random=False): arange(n)/n in the
# input's shape, float32; the reference is light_NAME_output_0.pb beside the model. onnxruntime runs
# through the same harness as a check of the harness and of the references. Run alone with
# `pytest -m onnx_light --durations=0` (the wall time of each model).
import pathlib
import time

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the test oracles: `make python` installs tests/python/requirements.txt")
import onnx_harness as h  # noqa: E402
from conftest import WALL_TIMES  # noqa: E402

LIGHT = pathlib.Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
MODELS = sorted(p.stem[len("light_"):] for p in LIGHT.glob("light_*.onnx"))
RTOL, ATOL = 1e-3, 1e-7  # ONNX's own for these models (its runner: model_test.rtol/atol)


def dummy_inputs(model):
    feeds = {}
    for x in h.graph_inputs(model):
        assert x.type.tensor_type.elem_type == onnx.TensorProto.FLOAT, f"{x.name}: not float32"
        shape = tuple(d.dim_value if d.HasField("dim_value") else 1 for d in x.type.tensor_type.shape.dim)
        n = int(np.prod(shape))
        feeds[x.name] = (np.arange(n).reshape(shape) / n).astype(np.float32)
    return feeds


def test_light_models_present():
    assert len(MODELS) >= 8, f"{LIGHT}: expected the onnx package's light models, found {MODELS}"


@pytest.mark.onnx_light
@pytest.mark.parametrize("backend", ["weft", "onnxruntime"])
@pytest.mark.parametrize("name", MODELS)
def test_light_model(name, backend, request, record_property):
    path = LIGHT / f"light_{name}.onnx"
    model = onnx.load(path)
    feeds = dummy_inputs(model)
    for value in feeds.values():
        assert value.std() > 0.1, "inputs must not be constant"
    refs = {o.name: h.load_tensor(LIGHT / f"light_{name}_output_{i}.pb") for i, o in enumerate(model.graph.output)}
    for ref in refs.values():
        assert np.isfinite(ref).all() and ref.std() > 0, "reference outputs must be non-trivial"
    if backend == "weft":
        run = h.make_runner("weft", request.getfixturevalue("weft_onnx"), timeout=1800)
    else:
        run = h.make_runner("onnxruntime")
    start = time.monotonic()
    try:
        got = run(path, feeds)
    except h.BackendError as e:
        pytest.fail(f"{backend} on light_{name}: {e}")
    wall = time.monotonic() - start
    record_property("wall_s", round(wall, 3))
    WALL_TIMES[f"light_{name} on {backend}"] = wall
    bad = [m for n, ref in refs.items() if (m := h.mismatch(n, got.get(n), ref, RTOL, ATOL))]
    assert not bad, f"light_{name} on {backend}: " + "; ".join(bad)
