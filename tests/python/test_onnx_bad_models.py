"""Bad ONNX models and inputs get exit 1 with a located, clear message from `weft model run`, never a crash."""
import subprocess

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the test oracles: `make python` installs tests/python/requirements.txt")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def graph_model(nodes, inputs, outputs, initializers=()):
    g = helper.make_graph(nodes, "bad", inputs, outputs, list(initializers))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


X = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
Y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
W45 = numpy_helper.from_array(np.ones((4, 5), np.float32), "w")


def bad_models(root):
    """name -> (model bytes, words the message must contain)."""
    full = (root / "examples" / "onnx" / "bert_tiny.onnx").read_bytes()
    unknown = graph_model([helper.make_node("FrobnicateX", ["x"], ["y"], name="mystery_node")], [X], [Y])
    shapes = graph_model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [X], [Y], [W45])
    missing = graph_model([helper.make_node("MatMul", ["x", "w_absent"], ["y"], name="mm")], [X], [Y])
    many = graph_model([helper.make_node("NonZero", ["x"], ["n"], name="nonzero_ids"),
                        helper.make_node("Cosh", ["x"], ["c"], name="some_cosh"),
                        helper.make_node("NonZero", ["c"], ["y"], name="nonzero_ids_2")], [X], [Y])
    hostile = graph_model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [X], [Y], [W45])
    w = hostile.graph.initializer[0]
    w.ClearField("raw_data")
    w.ClearField("float_data")
    w.data_location = TensorProto.EXTERNAL
    w.external_data.add(key="location", value="../../../../../../etc/passwd")
    return {
        "empty": (b"", ["empty"]),
        "every_unsupported_operator": (many.SerializeToString(), ["NonZero: 2 nodes, first node 0 'nonzero_ids'",
                                                                  "Cosh: 1 node, first node 1 'some_cosh'"]),
        "hostile_external_data": (hostile.SerializeToString(), ["initializer 'w'", "../../../../../../etc/passwd",
                                                                "outside the model's directory"]),
        "truncated": (full[: len(full) // 2], []),
        "garbage": (b"this is not a protobuf \xff\xfe\x00" * 7, []),
        "unknown_operator": (unknown.SerializeToString(), ["FrobnicateX", "mystery_node"]),
        "inconsistent_shapes": (shapes.SerializeToString(), ["mm"]),
        "missing_initializer": (missing.SerializeToString(), ["w_absent"]),
    }


@pytest.mark.onnx_models
@pytest.mark.parametrize("case", ["empty", "truncated", "garbage", "unknown_operator", "every_unsupported_operator",
                                  "inconsistent_shapes", "missing_initializer", "hostile_external_data",
                                  "missing_input", "directory"])
def test_bad_model_is_a_user_error(case, root, tmp_path, weft_onnx):
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=np.arange(6, dtype=np.float32).reshape(2, 3))
    if case == "missing_input":  # a good model, an .npz without its input
        path, words = tmp_path / "good.onnx", ["features_in"]
        xin = helper.make_tensor_value_info("features_in", TensorProto.FLOAT, [2, 4])
        w = numpy_helper.from_array(np.ones((4, 5), np.float32), "w")
        onnx.save(graph_model([helper.make_node("MatMul", ["features_in", "w"], ["y"])], [xin], [Y], [w]), path)
    elif case == "directory":  # a folder named like a model (today: "the file is 9223372036854775807 bytes")
        path, words = tmp_path / "model.onnx", ["is a directory, not a file"]
        path.mkdir()
    else:
        data, words = bad_models(root)[case]
        path = tmp_path / f"{case}.onnx"
        path.write_bytes(data)
    r = subprocess.run([weft_onnx, "model", "run", str(path), "--inputs", str(inputs), "--outputs",
                        str(tmp_path / "out.npz")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, f"{case}: exit {r.returncode}, stderr: {r.stderr[-2000:]}"
    assert "error:" in r.stderr, r.stderr
    for word in words:
        assert word in r.stderr, f"{case}: the message should name {word!r}: {r.stderr}"


@pytest.mark.parametrize("text", ["", "# only a comment\n", "sym n\n"], ids=["empty", "comment", "syms_only"])
def test_a_wmod_without_functions_is_refused(text, tmp_path, weft_binary):
    """`weft model check` of an empty .wmod said "ok: 0 functions" and exited 0."""
    path = tmp_path / "empty.wmod"
    path.write_text(text)
    r = subprocess.run([weft_binary, "model", "check", str(path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "defines no function" in r.stderr and "ok:" not in r.stdout, r.stdout + r.stderr
