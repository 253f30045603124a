"""weft.Builder: programs built statement by statement equal their text form."""

from fractions import Fraction

import pytest

import weft


def gated_mlp(b):
    x = b.input("X", "f16", [8, 4096])
    w1 = b.input("W1", "f16", [4096, 4096])
    w2 = b.input("W2", "f16", [4096, 4096])
    a = b.matmul(x, w1, name="A")
    bb = b.matmul(x, w2, name="B")
    s = b.silu(a, name="S")
    o = b.mul(s, bb, name="O")
    b.output(o)
    return b.build()


def test_builder_gives_the_program_of_the_example_file(example):
    built = gated_mlp(weft.Builder("gated_mlp"))
    assert built == weft.load(example("gated_mlp.weft"))
    assert str(built) == str(weft.load(example("gated_mlp.weft")))


def test_builder_round_trips_through_the_text_form():
    b = weft.Builder("norm_split")
    x = b.input("X", "f32", [4, 64])
    n = b.rms_norm(x, eps=1e-6, name="N")
    left, right = b.split(n, dim=1, parts=2, names=["L", "R"])
    s = b.scale(b.sum(b.sqr(left), dim=1), factor=Fraction(1, 32))
    t = b.shift(b.sum(right, dim=-1), offset="1/4096")
    b.output(b.add(s, t, name="O"))
    p = b.build()
    text = str(p)
    assert "N = rms_norm(X, dim=1, eps=1e-6)" in text  # the float's decimal form, exactly
    assert "factor=1/32" in text and "offset=1/4096" in text
    assert "L, R = split(N, dim=1, parts=2)" in text
    assert weft.parse(text) == p
    assert weft.parse(p.text(type_comments=False)) == p


def test_values_carry_their_inferred_types():
    b = weft.Builder("t")
    x = b.input("X", "f16", [16, 32])
    y = b.sum(x, dim=1)
    assert (y.dtype, y.shape) == ("f16", (16, 1))
    assert y.name  # a fresh name
    assert "f16" in repr(y)


def test_builder_mistakes_are_user_errors():
    b = weft.Builder("bad")
    x = b.input("X", "f16", [4, 8])
    with pytest.raises(weft.UserError, match="matmul"):
        b.matmul(x, x)  # [4, 8] x [4, 8]
    with pytest.raises(weft.UserError, match="no attribute 'axis'"):
        b.sum(x, axis=1)
    with pytest.raises(weft.UserError, match="unknown dtype"):
        b.input("Y", "f8", [4])
    with pytest.raises(weft.UserError, match="rational"):
        b.scale(x, factor=float("nan"))
    with pytest.raises(weft.UserError, match="integer"):
        b.sum(x, dim="1")
    other = weft.Builder("other").input("Z", "f16", [4, 8])
    with pytest.raises(weft.UserError, match="values of this builder"):
        b.add(x, other)
    with pytest.raises(weft.UserError, match="text format"):
        b.op("iter", x)
    with pytest.raises(AttributeError, match="weft.ops"):
        b.no_such_op(x)
    with pytest.raises(weft.UserError):
        b.input("X", "f16", [4, 8])  # a name is assigned once
