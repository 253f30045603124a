"""Programs from text and files, their text form, the checker, errors, pictures."""

import shutil

import pytest

import weft


def test_load_prints_the_canonical_text_and_parses_back(example):
    p = weft.load(example("gated_mlp.weft"))
    assert p.name == "gated_mlp"
    assert [s.name for s in p.inputs] == ["X", "W1", "W2"]
    assert p.inputs[0] == weft.TensorSpec("X", "f16", (8, 4096))
    assert p.outputs == [weft.TensorSpec("O", "f16", (8, 4096))]
    text = str(p)
    assert text.startswith("program gated_mlp\n")
    assert "O = mul(S, B)  # f16[8, 4096]" in text
    assert weft.parse(text) == p
    assert weft.parse(p.text(type_comments=False)) == p
    assert "#" not in p.text(type_comments=False)


def test_programs_differ_when_their_graphs_do(example):
    a = weft.load(example("gated_mlp.weft"))
    b = weft.parse(str(a).replace("silu(A)", "exp(A)"))
    assert a != b
    assert a == weft.load(example("gated_mlp.weft"))


def test_a_bad_program_raises_a_located_user_error():
    text = "program bad\ninput X: f16[4, 8]\nY = matmul(X, X)\noutput Y\n"
    with pytest.raises(weft.UserError) as info:
        weft.parse(text, "bad.weft")
    e = info.value
    assert (e.file, e.line) == ("bad.weft", 3)
    assert e.column is not None and e.column >= 1
    assert str(e).startswith(f"bad.weft:3:{e.column}: error: ")
    assert e.message and e.message in str(e)


def test_a_syntax_error_points_at_its_token():
    with pytest.raises(weft.UserError) as info:
        weft.parse("input X: f16[4, 8]\nY = exp(X\noutput Y\n", "syntax.weft")
    assert info.value.file == "syntax.weft"
    assert info.value.line == 2


def test_load_of_a_missing_file_is_a_user_error(tmp_path):
    with pytest.raises(weft.UserError) as info:
        weft.load(tmp_path / "missing.weft")
    assert info.value.file == str(tmp_path / "missing.weft")
    assert "cannot open" in info.value.message


def test_check_summarizes_a_valid_program_and_raises_at_a_violation(example):
    fused = weft.load(example("rms_norm_linear.fused.weft"))
    summary = fused.check(target="h100")
    assert "1 graph-defined kernel" in summary and "h100" in summary
    # Far more blocks per grid than any target allows: a located violation.
    big = weft.parse(str(fused).replace("block=128", "block=4096"), "big.weft")
    with pytest.raises(weft.UserError) as info:
        big.check(target="h100")
    assert info.value.file == "big.weft" and info.value.line is not None
    with pytest.raises(weft.UserError, match="unknown target|known targets|target"):
        fused.check(target="no-such-gpu")


def test_targets_and_ops_come_from_the_tables():
    names = [t[0] for t in weft.targets()]
    assert "h100" in names and "cpu" in names
    ops = {o["name"]: o for o in weft.ops()}
    assert ops["matmul"]["min_inputs"] == 2 and ops["rms_norm"]["kernel_level"]
    # One table: the model-only rows are listed too, with the model level alone.
    assert ops["rope"]["model_only"] and ops["rope"]["model_level"] and not ops["rope"]["kernel_level"]
    assert ops["matmul"]["model_level"] and not ops["matmul"]["model_only"]
    assert any(a[0] == "eps" for a in ops["rms_norm"]["attrs"])


def test_dot_text_and_svg(example):
    p = weft.load(example("rms_norm_linear.fused.weft"))
    assert p.dot().startswith("digraph")
    if shutil.which("dot") is None:
        with pytest.raises(weft.UserError, match="Graphviz"):
            p.svg()
        assert "Graphviz" in p._repr_svg_()
    else:
        svg = p._repr_svg_()
        assert "<svg" in svg and "</svg>" in svg


def test_svg_without_graphviz_says_so(example, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    p = weft.load(example("gated_mlp.weft"))
    with pytest.raises(weft.UserError, match="Graphviz 'dot' program is not on PATH"):
        p.svg()
    assert "install graphviz" in p._repr_svg_()


def test_save_writes_the_text(tmp_path, example):
    p = weft.load(example("gated_mlp.weft"))
    p.save(tmp_path / "p.weft")
    assert weft.load(tmp_path / "p.weft") == p
