"""An independent NumPy Qwen3 decode (RMSNorm, QK-norm, rotate-half RoPE, grouped-query attention
with a KV cache, SwiGLU, tied LM head) checked against `weft mpk run
examples/qwen3_tiny_decode_step.weft --dump DIR`: the same seeded weights, per-step logits within
f32 tolerance, the same greedy tokens. The reference shares nothing with weft but the weights and
the decode interface's conventions (mpk/decode_interface.h): it reads the model's shape from the
weights."""

import subprocess

import numpy as np
import pytest

EPS = 1e-6
PROMPT = [5, 17, 300]
STEPS = 12


def rms_norm(x, gain):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS) * gain.reshape(-1)


def rope(x, pos, theta):
    dh = x.shape[-1]
    angle = pos * theta ** (-2.0 * np.arange(dh // 2) / dh)
    cos, sin = np.tile(np.cos(angle), 2), np.tile(np.sin(angle), 2)
    lo, hi = x[..., : dh // 2], x[..., dh // 2 :]
    return x * cos + np.concatenate([-hi, lo], axis=-1) * sin


def silu(x):
    return x / (1 + np.exp(-x))


def qwen3_decode(w, tokens, steps, theta):
    """Logits of `steps` decode steps (f64); step p feeds tokens[p] at position p."""
    w = {k: v.astype(np.float64) for k, v in w.items()}
    dh = w["Gq0"].size
    layers = sum(1 for k in w if k.startswith("Wq"))
    hq, hkv = w["Wq0"].shape[1] // dh, w["Wk0"].shape[1] // dh
    group = hq // hkv
    keys = [[] for _ in range(layers)]
    values = [[] for _ in range(layers)]
    logits = []
    for pos in range(steps):
        x = w["EMB"][:, tokens[pos]]  # EMB is [D, V]: the tied LM head, transposed embedding
        for l in range(layers):
            h = rms_norm(x, w[f"Gattn{l}"])
            q = rope(rms_norm((h @ w[f"Wq{l}"]).reshape(hq, dh), w[f"Gq{l}"]), pos, theta)
            k = rope(rms_norm((h @ w[f"Wk{l}"]).reshape(hkv, dh), w[f"Gk{l}"]), pos, theta)
            keys[l].append(k)
            values[l].append((h @ w[f"Wv{l}"]).reshape(hkv, dh))
            kc, vc = np.stack(keys[l], axis=1), np.stack(values[l], axis=1)  # [hkv, pos+1, dh]
            out = np.empty((hq, dh))
            for head in range(hq):
                s = kc[head // group] @ q[head] / np.sqrt(dh)
                p = np.exp(s - s.max())
                out[head] = (p / p.sum()) @ vc[head // group]
            x = x + out.reshape(-1) @ w[f"Wo{l}"]
            h = rms_norm(x, w[f"Gmlp{l}"])
            x = x + (silu(h @ w[f"Wgate{l}"]) * (h @ w[f"Wup{l}"])) @ w[f"Wdown{l}"]
        logits.append(rms_norm(x, w["Gout"]) @ w["EMB"])
    return np.array(logits)


_DUMPS = {}


@pytest.fixture
def dump(weft_binary, root, tmp_path_factory):
    """weft's weights and decode of the tiny program, run once per binary."""
    if weft_binary not in _DUMPS:
        out = tmp_path_factory.mktemp("qwen3_tiny")
        args = [weft_binary, "mpk", "run", str(root / "examples" / "qwen3_tiny_decode_step.weft"),
                "--tokens", str(STEPS), "--workers", "3", "--init-std", "0.1", "--dump", str(out),
                "--prompt", *map(str, PROMPT)]
        run = subprocess.run(args, capture_output=True, text=True)
        assert run.returncode == 0, run.stdout + run.stderr
        assert "identical tokens and logits" in run.stdout
        decode = np.load(out / "decode.npz")
        _DUMPS[weft_binary] = (dict(np.load(out / "weights.npz")),
                               {k: decode[k] for k in decode.files})
    return _DUMPS[weft_binary]


def test_inputs_are_not_trivial_and_weights_are_bf16(dump):
    weights, decode = dump
    assert "EMB" in weights and "Wq0" in weights and "Gq0" in weights
    for name, w in weights.items():
        assert np.all(np.isfinite(w)) and w.std() > 0, name
        bits = w.astype(np.float32).view(np.uint32)
        assert np.all(bits & 0xFFFF == 0), f"{name} holds values that are not bf16"
    logits = decode["logits"]
    assert logits.shape[0] == STEPS
    assert logits.std(axis=1).min() > 0.1
    assert np.abs(np.diff(logits, axis=0)).max() > 0.5, "logits do not vary across steps"
    generated = decode["tokens"][len(PROMPT):]
    assert len(set(generated.tolist())) > 2, "the greedy sequence is trivial"


def test_logits_and_greedy_tokens_match_the_numpy_reference(dump):
    weights, decode = dump
    tokens = [int(t) for t in decode["tokens"]]
    assert tokens[: len(PROMPT)] == PROMPT
    assert len(tokens) == STEPS + 1
    want = qwen3_decode(weights, tokens, STEPS, float(decode["rope_theta"][0]))
    got = decode["logits"].astype(np.float64)
    scale = np.abs(want).max()
    assert np.abs(got - want).max() <= 1e-4 * scale, np.abs(got - want).max()
    # After the prompt, each fed token is the previous step's greedy choice, in both.
    for step in range(len(PROMPT) - 1, STEPS):
        assert tokens[step + 1] == int(want[step].argmax()), step


def test_the_reference_sees_a_changed_weight(dump):
    """The comparison can fail: one layer-1 value weight scaled by 1.01 moves the logits beyond the
    tolerance (a key weight would not: QK-norm cancels its scale)."""
    weights, decode = dump
    tokens = [int(t) for t in decode["tokens"]]
    changed = dict(weights)
    changed["Wv1"] = weights["Wv1"] * 1.01
    want = qwen3_decode(changed, tokens, STEPS, float(decode["rope_theta"][0]))
    assert np.abs(decode["logits"] - want).max() > 1e-4 * np.abs(want).max()
