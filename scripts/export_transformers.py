#!/usr/bin/env python3
"""Writes small transformer models (a BERT-style encoder, a Llama/Qwen3-style decoder) as ONNX files with seeded random weights."""
# The graphs are spelled the way torch.onnx exporters spell them (Shape->Gather->Unsqueeze->Concat
# chains for dynamic reshapes, RMSNorm as Pow/ReduceMean/Add/Sqrt/Div/Mul, Gelu through Erf,
# rotary embedding by Gather on cos/sin tables and Slice/Neg/Concat, GQA by Unsqueeze/Expand/
# Reshape, a causal mask sliced from a constant and applied with Where), so weft's importer meets
# what real models contain; the onnx helper API keeps them small and deterministic (nothing
# downloaded, no torch).
#
#   python scripts/export_transformers.py [--out examples/onnx] [--check]
import argparse
import dataclasses
import math
import pathlib
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
INT64_MAX = np.iinfo(np.int64).max


@dataclasses.dataclass
class BertConfig:
    name: str = "bert_tiny"
    layers: int = 2
    hidden: int = 64
    heads: int = 4
    ffn: int = 128
    vocab: int = 256
    max_positions: int = 64
    attention_mask: bool = True
    layer_norm_eps: float = 1e-12
    seed: int = 15


@dataclasses.dataclass
class LlamaConfig:
    name: str = "llama_tiny"
    layers: int = 2
    hidden: int = 64
    heads: int = 4
    kv_heads: int = 2
    ffn: int = 160
    vocab: int = 256
    max_positions: int = 64
    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-6
    qk_norm: bool = True  # Qwen3 normalizes q and k per head before the rotary embedding.
    tie_embeddings: bool = False
    seed: int = 16


class GraphBuilder:
    """Names values, collects nodes and initializers, and spells the exporters' idioms once."""

    def __init__(self, seed):
        self.nodes = []
        self.initializers = []
        self.counter = 0
        self.rng = np.random.default_rng(seed)

    def fresh(self, hint):
        self.counter += 1
        return f"{hint}_{self.counter}"

    def const(self, hint, array):
        name = self.fresh(hint)
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(self, op_type, inputs, hint=None, outputs=1, out=None, **attrs):
        """Adds a node; `out` names its output (a graph output), else a fresh name from `hint`."""
        names = [out] if out else [self.fresh(hint or op_type.lower()) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op_type, list(inputs), names, name=names[0] + "_node", **attrs))
        return names[0] if outputs == 1 else names

    # Seeded weights, scaled so activations stay of order one through the layers: a test compares
    # non-trivial numbers (softmax far from uniform, Gelu and SiLU off their linear parts).
    def weight(self, hint, shape, fan_in):
        return self.const(hint, (self.rng.standard_normal(shape) / math.sqrt(fan_in)).astype(np.float32))

    def gain(self, hint, size):
        return self.const(hint, (1.0 + 0.1 * self.rng.standard_normal(size)).astype(np.float32))

    def bias(self, hint, size):
        return self.const(hint, (0.1 * self.rng.standard_normal(size)).astype(np.float32))

    def scalar(self, hint, value, dtype=np.float32):
        return self.const(hint, np.array(value, dtype=dtype))

    def ints(self, hint, values):
        return self.const(hint, np.array(values, dtype=np.int64))

    def dim(self, x, axis):
        """One dimension of x as a 1-element int64 tensor: Shape -> Gather(scalar) -> Unsqueeze."""
        shape = self.op("Shape", [x], "shape")
        d = self.op("Gather", [shape, self.scalar("axis", axis, np.int64)], "dim", axis=0)
        return self.op("Unsqueeze", [d, self.ints("axes", [0])], "dim1")

    def shape_of(self, parts):
        """A shape tensor concatenated from dims (1-element tensors) and constant lists."""
        pieces = [p if isinstance(p, str) else self.ints("shape_part", p) for p in parts]
        return self.op("Concat", pieces, "target_shape", axis=0)

    def reshape(self, x, parts):
        return self.op("Reshape", [x, self.shape_of(parts)], "reshaped")

    def linear(self, x, n_in, n_out, hint, bias=True, out=None):
        y = self.op("MatMul", [x, self.weight(hint + "_w", [n_in, n_out], n_in)], hint, out=out)
        return self.op("Add", [y, self.bias(hint + "_b", n_out)], hint + "_biased") if bias else y

    def rms_norm(self, x, size, eps):
        sq = self.op("Pow", [x, self.scalar("two", 2.0)], "sq")
        mean = self.op("ReduceMean", [sq], "mean_sq", axes=[-1], keepdims=1)
        rms = self.op("Sqrt", [self.op("Add", [mean, self.scalar("eps", eps)], "var_eps")], "rms")
        normed = self.op("Div", [x, rms], "normed")
        return self.op("Mul", [normed, self.gain("rms_w", size)], "rms_norm")

    def layer_norm(self, x, size, eps):
        return self.op("LayerNormalization", [x, self.gain("ln_w", size), self.bias("ln_b", size)],
                       "layer_norm", axis=-1, epsilon=eps)

    def attention(self, q, k, v, head_dim, mask_add=None, mask_where=None):
        """softmax(q k^T / sqrt(d) [+ mask]) v over [batch, heads, seq, head_dim]."""
        kt = self.op("Transpose", [k], "k_t", perm=[0, 1, 3, 2])
        scores = self.op("MatMul", [q, kt], "scores")
        scores = self.op("Div", [scores, self.scalar("sqrt_d", math.sqrt(head_dim))], "scaled")
        if mask_add is not None:
            scores = self.op("Add", [scores, mask_add], "masked")
        if mask_where is not None:
            low = self.scalar("mask_value", np.finfo(np.float32).min)
            scores = self.op("Where", [mask_where, scores, low], "causal")
        probs = self.op("Softmax", [scores], "probs", axis=-1)
        return self.op("MatMul", [probs, v], "context")

    def model(self, name, inputs, outputs):
        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="weft scripts/export_transformers.py")
        model.ir_version = 8  # the newest IR version opset 17 readers (onnxruntime, libonnx 1.12) accept
        return model


def split_heads(g, x, batch, seq, heads, head_dim):
    """[batch, seq, heads*head_dim] -> [batch, heads, seq, head_dim]."""
    x = g.reshape(x, [batch, seq, [heads, head_dim]])
    return g.op("Transpose", [x], "heads", perm=[0, 2, 1, 3])


def merge_heads(g, x, batch, seq, hidden):
    x = g.op("Transpose", [x], "merged_t", perm=[0, 2, 1, 3])
    return g.reshape(x, [batch, seq, [hidden]])


def bert(cfg: BertConfig):
    g = GraphBuilder(cfg.seed)
    head_dim = cfg.hidden // cfg.heads
    ids = "input_ids"
    batch, seq = g.dim(ids, 0), g.dim(ids, 1)
    x = g.op("Gather", [g.weight("word_emb", [cfg.vocab, cfg.hidden], 1), ids], "tokens", axis=0)
    # position_ids[:, :seq] from a constant buffer, then the embedding lookup (as BERT exports do).
    positions = g.ints("position_ids", np.arange(cfg.max_positions).reshape(1, -1))
    positions = g.op("Slice", [positions, g.ints("zero", [0]), seq, g.ints("axis1", [1])], "pos_ids")
    pos = g.op("Gather", [g.weight("pos_emb", [cfg.max_positions, cfg.hidden], 1), positions], "pos", axis=0)
    x = g.op("Add", [x, pos], "embedded")
    x = g.op("Add", [x, g.bias("token_type_emb", cfg.hidden)], "embedded_tt")
    x = g.layer_norm(x, cfg.hidden, cfg.layer_norm_eps)
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])]
    mask_add = None
    if cfg.attention_mask:
        inputs.append(helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"]))
        m = g.op("Unsqueeze", ["attention_mask", g.ints("axes", [1, 2])], "mask4")
        m = g.op("Cast", [m], "mask_f", to=TensorProto.FLOAT)
        m = g.op("Sub", [g.scalar("one", 1.0), m], "mask_inv")
        mask_add = g.op("Mul", [m, g.scalar("mask_scale", -10000.0)], "mask_add")
    for layer in range(cfg.layers):
        p = f"l{layer}_"
        q = split_heads(g, g.linear(x, cfg.hidden, cfg.hidden, p + "q"), batch, seq, cfg.heads, head_dim)
        k = split_heads(g, g.linear(x, cfg.hidden, cfg.hidden, p + "k"), batch, seq, cfg.heads, head_dim)
        v = split_heads(g, g.linear(x, cfg.hidden, cfg.hidden, p + "v"), batch, seq, cfg.heads, head_dim)
        ctx = merge_heads(g, g.attention(q, k, v, head_dim, mask_add=mask_add), batch, seq, cfg.hidden)
        x = g.layer_norm(g.op("Add", [x, g.linear(ctx, cfg.hidden, cfg.hidden, p + "o")], "res1"),
                         cfg.hidden, cfg.layer_norm_eps)
        h = g.linear(x, cfg.hidden, cfg.ffn, p + "up")
        # gelu(h) = h * 0.5 * (1 + erf(h / sqrt(2)))
        e = g.op("Erf", [g.op("Div", [h, g.scalar("sqrt2", math.sqrt(2.0))], "h_s")], "erf")
        e = g.op("Add", [e, g.scalar("one", 1.0)], "erf1")
        h = g.op("Mul", [g.op("Mul", [h, e], "gelu_a"), g.scalar("half", 0.5)], "gelu")
        x = g.layer_norm(g.op("Add", [x, g.linear(h, cfg.ffn, cfg.hidden, p + "down")], "res2"),
                         cfg.hidden, cfg.layer_norm_eps)
    g.op("Identity", [x], out="last_hidden_state")
    # Pooler: the first token through a dense layer (Gemm with transB, as nn.Linear exports) and Tanh.
    first = g.op("Gather", ["last_hidden_state", g.scalar("first", 0, np.int64)], "cls", axis=1)
    pooled = g.op("Gemm", [first, g.weight("pool_w", [cfg.hidden, cfg.hidden], cfg.hidden),
                           g.bias("pool_b", cfg.hidden)], "pool", transB=1)
    g.op("Tanh", [pooled], out="pooler_output")
    outputs = [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "seq", cfg.hidden]),
               helper.make_tensor_value_info("pooler_output", TensorProto.FLOAT, ["batch", cfg.hidden])]
    return g.model(cfg.name, inputs, outputs)


def rotate(g, x, cos, sin, head_dim):
    """x * cos + rotate_half(x) * sin, rotate_half(x) = concat(-x[..., d/2:], x[..., :d/2])."""
    half = head_dim // 2
    last = g.ints("last_axis", [-1])
    x1 = g.op("Slice", [x, g.ints("zero", [0]), g.ints("half", [half]), last], "x1")
    x2 = g.op("Slice", [x, g.ints("half", [half]), g.ints("end", [INT64_MAX]), last], "x2")
    rot = g.op("Concat", [g.op("Neg", [x2], "neg_x2"), x1], "rot", axis=-1)
    return g.op("Add", [g.op("Mul", [x, cos], "x_cos"), g.op("Mul", [rot, sin], "rot_sin")], "roped")


def llama(cfg: LlamaConfig):
    g = GraphBuilder(cfg.seed)
    head_dim = cfg.hidden // cfg.heads
    group = cfg.heads // cfg.kv_heads
    ids = "input_ids"
    batch, seq = g.dim(ids, 0), g.dim(ids, 1)
    embedding = g.weight("embed", [cfg.vocab, cfg.hidden], 1)
    x = g.op("Gather", [embedding, ids], "tokens", axis=0)
    # Rotary tables for every position, looked up by position ids 0..seq-1.
    inv_freq = 1.0 / cfg.rope_theta ** (np.arange(0, head_dim, 2) / head_dim)
    angles = np.outer(np.arange(cfg.max_positions), inv_freq)
    angles = np.concatenate([angles, angles], axis=-1)
    positions = g.ints("positions", np.arange(cfg.max_positions))
    positions = g.op("Slice", [positions, g.ints("zero", [0]), seq, g.ints("axis0", [0])], "pos_ids")
    tables = {}
    for fn in ("cos", "sin"):
        table = g.const(fn + "_table", getattr(np, fn)(angles).astype(np.float32))
        t = g.op("Gather", [table, positions], fn, axis=0)  # [seq, head_dim]
        tables[fn] = g.op("Unsqueeze", [t, g.ints("axes", [0, 1])], fn + "4")
    # Causal mask: the top-left [seq, seq] corner of a constant lower-triangular buffer.
    tril = g.const("causal_buffer", np.tril(np.ones((cfg.max_positions,) * 2, dtype=bool)).reshape(
        1, 1, cfg.max_positions, cfg.max_positions))
    ends = g.op("Concat", [seq, seq], "mask_ends", axis=0)
    causal = g.op("Slice", [tril, g.ints("zeros", [0, 0]), ends, g.ints("axes23", [2, 3])], "causal_mask")
    for layer in range(cfg.layers):
        p = f"l{layer}_"
        h = g.rms_norm(x, cfg.hidden, cfg.rms_norm_eps)
        q = g.reshape(g.linear(h, cfg.hidden, cfg.heads * head_dim, p + "q", bias=False),
                      [batch, seq, [cfg.heads, head_dim]])
        k = g.reshape(g.linear(h, cfg.hidden, cfg.kv_heads * head_dim, p + "k", bias=False),
                      [batch, seq, [cfg.kv_heads, head_dim]])
        v = split_heads(g, g.linear(h, cfg.hidden, cfg.kv_heads * head_dim, p + "v", bias=False),
                        batch, seq, cfg.kv_heads, head_dim)
        if cfg.qk_norm:
            q, k = g.rms_norm(q, head_dim, cfg.rms_norm_eps), g.rms_norm(k, head_dim, cfg.rms_norm_eps)
        q = g.op("Transpose", [q], "q_heads", perm=[0, 2, 1, 3])
        k = g.op("Transpose", [k], "k_heads", perm=[0, 2, 1, 3])
        q = rotate(g, q, tables["cos"], tables["sin"], head_dim)
        k = rotate(g, k, tables["cos"], tables["sin"], head_dim)
        # repeat_kv: [b, kv, s, d] -> [b, kv, group, s, d] -> [b, heads, s, d]
        kv_shape = [batch, [cfg.kv_heads, group], seq, [head_dim]]
        repeated = []
        for t in (k, v):
            t = g.op("Unsqueeze", [t, g.ints("axes", [2])], "kv5")
            t = g.op("Expand", [t, g.shape_of(kv_shape)], "kv_exp")
            repeated.append(g.reshape(t, [batch, [cfg.heads], seq, [head_dim]]))
        ctx = g.attention(q, repeated[0], repeated[1], head_dim, mask_where=causal)
        ctx = merge_heads(g, ctx, batch, seq, cfg.heads * head_dim)
        x = g.op("Add", [x, g.linear(ctx, cfg.heads * head_dim, cfg.hidden, p + "o", bias=False)], "res1")
        h = g.rms_norm(x, cfg.hidden, cfg.rms_norm_eps)
        gate = g.linear(h, cfg.hidden, cfg.ffn, p + "gate", bias=False)
        up = g.linear(h, cfg.hidden, cfg.ffn, p + "up", bias=False)
        silu = g.op("Mul", [gate, g.op("Sigmoid", [gate], "sig")], "silu")
        down = g.linear(g.op("Mul", [silu, up], "swiglu"), cfg.ffn, cfg.hidden, p + "down", bias=False)
        x = g.op("Add", [x, down], "res2")
    x = g.rms_norm(x, cfg.hidden, cfg.rms_norm_eps)
    if cfg.tie_embeddings:
        head = g.op("Transpose", [embedding], "lm_head_t", perm=[1, 0])
        g.op("MatMul", [x, head], out="logits")
    else:
        g.linear(x, cfg.hidden, cfg.vocab, "lm_head", bias=False, out="logits")
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "seq", cfg.vocab])]
    return g.model(cfg.name, inputs, outputs)


MODELS = {"bert_tiny": lambda: bert(BertConfig()), "llama_tiny": lambda: llama(LlamaConfig())}


def make_model(cfg):
    """The checked ONNX model of a BertConfig or LlamaConfig."""
    model = bert(cfg) if isinstance(cfg, BertConfig) else llama(cfg)
    onnx.checker.check_model(model, full_check=True)
    return model


def check_with_onnxruntime(path, shapes=((1, 5), (3, 17))):
    """Runs the model at several (batch, seq) shapes and checks what the spelling must mean: finite
    outputs of the right shape, a decoder that is causal (changing the last token changes no earlier
    logit), an encoder whose padded positions do not reach the others."""
    import onnxruntime as ort

    model = onnx.load(path)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    has_mask = any(i.name == "attention_mask" for i in model.graph.input)
    rng = np.random.default_rng(0)
    for batch, seq in shapes:
        ids = rng.integers(0, 256, (batch, seq), dtype=np.int64)
        feeds = {"input_ids": ids}
        if has_mask:
            feeds["attention_mask"] = np.ones((batch, seq), dtype=np.int64)
        first = dict(zip(names, session.run(None, feeds)))
        for name, value in first.items():
            assert np.isfinite(value).all(), f"{path}: {name} not finite at {batch}x{seq}"
            assert value.shape[0] == batch, f"{path}: {name} has shape {value.shape}"
            print(f"  {name} {value.shape} std {value.std():.3f}", file=sys.stderr)
        changed = dict(feeds, input_ids=ids.copy())
        changed["input_ids"][:, -1] = (ids[:, -1] + 1) % 256
        if has_mask:
            changed["attention_mask"] = np.ones_like(ids)
            changed["attention_mask"][:, -1] = 0
            feeds = dict(feeds, attention_mask=changed["attention_mask"])
            first = dict(zip(names, session.run(None, feeds)))
        second = dict(zip(names, session.run(None, changed)))
        key = "logits" if "logits" in names else "last_hidden_state"
        assert np.allclose(first[key][:, :-1], second[key][:, :-1], atol=1e-5), f"{path}: later token leaks"
        assert not np.allclose(first[key][:, -1], second[key][:, -1]), f"{path}: last token ignored"


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default=str(pathlib.Path(__file__).resolve().parents[1] / "examples" / "onnx"))
    parser.add_argument("--check", action="store_true", help="also run each model with onnxruntime")
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, make in MODELS.items():
        model = make()
        onnx.checker.check_model(model, full_check=True)  # full_check: also infers every shape
        path = out / f"{name}.onnx"
        onnx.save(model, path)
        print(f"{path}: {len(model.graph.node)} nodes, {path.stat().st_size} bytes", file=sys.stderr)
        if args.check:
            check_with_onnxruntime(path)


if __name__ == "__main__":
    main()
