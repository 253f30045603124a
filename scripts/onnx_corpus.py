#!/usr/bin/env python3
"""Writes examples/onnx/corpus/: tiny GPT-2, BERT, Llama, ResNet and MobileNetV2 models exported by both PyTorch ONNX exporters, with onnxruntime's outputs as references."""
# The importer's own test models (scripts/export_transformers.py) are spelled by hand; this corpus
# is what users bring: architectures from `transformers` and `torchvision` built from small configs
# with seeded random weights, exported by torch.onnx's classic exporter (TorchScript, opset 17) and
# its dynamo exporter (torch.export, opset 18), with dynamic and fixed shapes, plus a decoder with
# its KV cache as inputs and outputs (`past_key_values.N.key` / `present.N.key`, as Hugging Face's
# exporters name them). Each model's reference is onnxruntime's output at one or two shapes.
#
#   make onnx-corpus        # a venv of its own (build/corpus-venv: torch, transformers, ...)
#   build/corpus-venv/bin/python scripts/onnx_corpus.py [--out DIR] [--only NAME,...]
#
# Rerunning writes the same bytes on the same machine and package versions (seeded weights and
# inputs, onnxruntime on one thread, exporter metadata that names source paths dropped, .npz
# entries with a fixed timestamp). An export that fails is recorded in models.json with its error
# and the run goes on; tests/python/test_onnx_corpus.py holds weft to the references and to
# status.json (the expected state, kept by hand).
import argparse
import contextlib
import dataclasses
import io
import json
import os
import pathlib
import sys
import traceback
import warnings
import zipfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "examples" / "onnx" / "corpus"
BATCH_BOUND = 4  # references use batch <= 3; the bounds weft plans memory for
MAX_POSITIONS = 64


@dataclasses.dataclass
class Spec:
    """One architecture: how to build it and feed it."""

    name: str
    kind: str  # "text" (input_ids, maybe attention_mask), "image", "decoder_kv"
    build: object  # () -> torch.nn.Module, weights seeded
    inputs: list  # graph input names
    outputs: list  # graph output names
    vocab: int = 0
    mask: bool = False
    seed: int = 0


# ---- models -------------------------------------------------------------------------------------


def seeded(seed):
    import torch

    torch.manual_seed(seed)
    np.random.seed(seed)


class LogitsOnly:
    """Wraps a Hugging Face model so it returns plain tensors (no cache, no ModelOutput)."""

    @staticmethod
    def make(model, outputs, mask):
        import torch

        class Wrapped(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.model = model

            def forward(self, input_ids, attention_mask=None):
                kw = {"attention_mask": attention_mask} if mask else {}
                r = self.model(input_ids=input_ids, use_cache=False, return_dict=True, **kw)
                return tuple(getattr(r, o) for o in outputs)

        return Wrapped().eval()


def gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    seeded(290)
    cfg = GPT2Config(vocab_size=128, n_positions=MAX_POSITIONS, n_embd=32, n_layer=2, n_head=2,
                     bos_token_id=0, eos_token_id=0)
    return LogitsOnly.make(GPT2LMHeadModel(cfg).eval(), ["logits"], mask=True)


def bert():
    from transformers import BertConfig, BertModel

    seeded(291)
    cfg = BertConfig(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=MAX_POSITIONS)
    return LogitsOnly.make(BertModel(cfg).eval(), ["last_hidden_state", "pooler_output"], mask=True)


def llama_config():
    from transformers import LlamaConfig

    # Grouped-query attention (4 query heads share 2 key/value heads) and rotary embedding.
    return LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=MAX_POSITIONS)


def llama():
    from transformers import LlamaForCausalLM

    seeded(292)
    return LogitsOnly.make(LlamaForCausalLM(llama_config()).eval(), ["logits"], mask=True)


def llama_kv():
    """A Llama decode step with its cache: flat tensors in and out, as Hugging Face's exporters
    (optimum) lay a decoder with past out: input_ids, attention_mask (past + new positions),
    position_ids, past_key_values.N.key/value -> logits, present.N.key/value."""
    import torch
    from transformers import DynamicCache, LlamaForCausalLM

    seeded(292)  # the same weights as `llama`
    model = LlamaForCausalLM(llama_config()).eval()
    layers = model.config.num_hidden_layers

    class Step(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, position_ids, *past):
            cache = DynamicCache()
            for i in range(layers):
                cache.update(past[2 * i], past[2 * i + 1], i)
            r = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                           cache=cache, use_cache=True, return_dict=True)
            present = []
            for layer in r.cache.layers:
                present += [layer.keys, layer.values]
            return (r.logits, *present)

    return Step().eval()


def calibrate_batch_norm(model, shape, seed):
    """Running statistics from random images, so that eval-mode outputs keep unit scale instead of
    vanishing or exploding through layers of randomly initialized convolutions."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.reset_running_stats()
            m.momentum = None  # a cumulative average over the calibration batches
    model.train()
    with torch.no_grad():
        for _ in range(8):
            model(torch.randn(16, *shape[1:], generator=gen))
    return model.eval()


def resnet():
    """ResNet-18's structure (7x7 stem, max pool, four stages of two BasicBlocks, global average
    pool, fc) with widths 8-64 instead of 64-512."""
    import torch
    from torchvision.models.resnet import BasicBlock, conv1x1

    seeded(293)

    class SmallResNet(torch.nn.Module):
        def __init__(self, widths=(8, 16, 32, 64), classes=10):
            super().__init__()
            self.conv1 = torch.nn.Conv2d(3, widths[0], 7, 2, 3, bias=False)
            self.bn1 = torch.nn.BatchNorm2d(widths[0])
            self.relu = torch.nn.ReLU(inplace=True)
            self.maxpool = torch.nn.MaxPool2d(3, 2, 1)
            stages, cin = [], widths[0]
            for i, w in enumerate(widths):
                stride = 1 if i == 0 else 2
                down = None
                if stride != 1 or cin != w:
                    down = torch.nn.Sequential(conv1x1(cin, w, stride), torch.nn.BatchNorm2d(w))
                stages.append(torch.nn.Sequential(BasicBlock(cin, w, stride, down), BasicBlock(w, w)))
                cin = w
            self.layers = torch.nn.Sequential(*stages)
            self.avgpool = torch.nn.AdaptiveAvgPool2d(1)
            self.fc = torch.nn.Linear(cin, classes)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            return self.fc(torch.flatten(self.avgpool(self.layers(x)), 1))

    return calibrate_batch_norm(SmallResNet(), IMAGE, 393)


def mobilenet():
    from torchvision.models import mobilenet_v2

    seeded(294)
    return calibrate_batch_norm(mobilenet_v2(num_classes=10, width_mult=0.25), IMAGE, 394)


IMAGE = (1, 3, 64, 64)
SPECS = [
    Spec("gpt2", "text", gpt2, ["input_ids", "attention_mask"], ["logits"], vocab=128, mask=True),
    Spec("bert", "text", bert, ["input_ids", "attention_mask"], ["last_hidden_state", "pooler_output"],
         vocab=128, mask=True),
    Spec("llama", "text", llama, ["input_ids", "attention_mask"], ["logits"], vocab=128, mask=True),
    Spec("resnet", "image", resnet, ["pixel_values"], ["logits"]),
    Spec("mobilenetv2", "image", mobilenet, ["pixel_values"], ["logits"]),
]
KV_LAYERS, KV_HEADS, HEAD_DIM = 2, 2, 8
KV_SPEC = Spec("llama_kv", "decoder_kv", llama_kv,
               ["input_ids", "attention_mask", "position_ids"]
               + [f"past_key_values.{i}.{kv}" for i in range(KV_LAYERS) for kv in ("key", "value")],
               ["logits"] + [f"present.{i}.{kv}" for i in range(KV_LAYERS) for kv in ("key", "value")],
               vocab=128)

# ---- inputs -------------------------------------------------------------------------------------

# (batch, seq) of the example the exporters trace and of the references: the dynamo exporter
# specializes dims of size 0 or 1 in its example, so the example has neither; the references
# include batch 1, as users run.
TEXT_EXAMPLE, TEXT_SHAPES = (2, 8), [(1, 7), (3, 12)]
IMAGE_EXAMPLE, IMAGE_BATCHES = 2, [1, 3]
# (batch, past, new tokens) of the decode step.
KV_EXAMPLE, KV_SHAPES = (2, 5, 3), [(1, 6, 1), (2, 9, 1)]


def text_feeds(spec, batch, seq, rng):
    feeds = {"input_ids": rng.integers(0, spec.vocab, (batch, seq), dtype=np.int64)}
    if spec.mask:
        mask = np.ones((batch, seq), dtype=np.int64)
        for row in range(batch):  # padding at the end of every row but the first
            if row:
                mask[row, seq - (row % (seq - 1)) - 1:] = 0
        feeds["attention_mask"] = mask
    return feeds


def image_feeds(batch, rng):
    return {"pixel_values": rng.standard_normal((batch, *IMAGE[1:])).astype(np.float32)}


def kv_feeds(batch, past, new, rng):
    feeds = {"input_ids": rng.integers(0, KV_SPEC.vocab, (batch, new), dtype=np.int64),
             "attention_mask": np.ones((batch, past + new), dtype=np.int64),
             "position_ids": np.tile(np.arange(past, past + new, dtype=np.int64), (batch, 1))}
    for i in range(KV_LAYERS):
        for kv in ("key", "value"):
            feeds[f"past_key_values.{i}.{kv}"] = rng.standard_normal((batch, KV_HEADS, past, HEAD_DIM)).astype(np.float32)
    return feeds


def feeds_for(spec, shape, rng):
    if spec.kind == "image":
        return image_feeds(shape, rng)
    if spec.kind == "decoder_kv":
        return kv_feeds(*shape, rng)
    return text_feeds(spec, *shape, rng)


# ---- export -------------------------------------------------------------------------------------


def dynamic_axes(spec):
    """Classic exporter: {name: {axis: dim_param}}; every text input is [batch, seq]."""
    if spec.kind == "image":
        return {"pixel_values": {0: "batch"}, "logits": {0: "batch"}}
    if spec.kind == "text":
        axes = {n: {0: "batch", 1: "seq"} for n in spec.inputs}
        for o in spec.outputs:
            axes[o] = {0: "batch", 1: "seq"} if o != "pooler_output" else {0: "batch"}
        return axes
    axes = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "total_seq"},
            "position_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}}
    for n in spec.inputs[3:]:
        axes[n] = {0: "batch", 2: "past_seq"}
    for n in spec.outputs[1:]:
        axes[n] = {0: "batch", 2: "total_seq"}
    return axes


def dynamic_shapes(spec):
    """Dynamo exporter: torch.export Dims by input position (the forward's arguments)."""
    from torch.export import Dim

    batch = Dim("batch", min=1, max=BATCH_BOUND * 16)
    if spec.kind == "image":
        return ({0: batch},)
    seq = Dim("seq", min=1, max=MAX_POSITIONS)
    if spec.kind == "text":
        return tuple({0: batch, 1: seq} for _ in spec.inputs)
    past = Dim("past_seq", min=1, max=MAX_POSITIONS)
    cache = [{0: batch, 2: past} for _ in spec.inputs[3:]]
    # torch.export relates dims only linearly to one root (past + 1, not past + seq): the mask's
    # length is left for it to infer. The cache is the forward's *past: one tuple.
    return ({0: batch, 1: seq}, {0: batch, 1: Dim.AUTO}, {0: batch, 1: seq}, tuple(cache))


def example_args(spec):
    import torch

    rng = np.random.default_rng(1)
    shape = {"image": IMAGE_EXAMPLE, "text": TEXT_EXAMPLE, "decoder_kv": KV_EXAMPLE}[spec.kind]
    feeds = feeds_for(spec, shape, rng)
    if spec.kind == "text":  # the traced example without padding: no data-dependent branch taken
        feeds["attention_mask"] = np.ones_like(feeds["attention_mask"])
    return tuple(torch.from_numpy(feeds[n]) for n in spec.inputs)


def export(spec, model, exporter, dynamic, path, external_data):
    import torch

    args = example_args(spec)
    common = dict(input_names=spec.inputs, output_names=spec.outputs)
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        if exporter == "classic":
            torch.onnx.export(model, args, str(path), dynamo=False, opset_version=17,
                              dynamic_axes=dynamic_axes(spec) if dynamic else None, **common)
        else:
            program = torch.onnx.export(model, args, dynamo=True, opset_version=18,
                                        dynamic_shapes=dynamic_shapes(spec) if dynamic else None,
                                        optimize=True, verbose=False, **common)
            # external_data=True: the weights in PATH.data, as PyTorch saves models over 2 GB.
            program.save(str(path), external_data=external_data)


def normalize(path):
    """Drops what makes exports differ between checkouts and runs but means nothing to a runtime:
    doc strings and metadata (the dynamo exporter records source file paths and stack traces)."""
    import onnx

    m = onnx.load(str(path), load_external_data=False)

    def clean(graph):
        graph.doc_string = ""
        for vi in [*graph.input, *graph.output, *graph.value_info]:
            vi.doc_string = ""
            del vi.metadata_props[:]
        for n in graph.node:
            n.doc_string = ""
            del n.metadata_props[:]
            for a in n.attribute:
                if a.HasField("g"):
                    clean(a.g)
                for g in a.graphs:
                    clean(g)

    clean(m.graph)
    for f in m.functions:
        f.doc_string = ""
        for n in f.node:
            n.doc_string = ""
            del n.metadata_props[:]
    m.doc_string = ""
    del m.metadata_props[:]
    with open(path, "wb") as f:
        f.write(m.SerializeToString(deterministic=True))
    onnx.checker.check_model(str(path), full_check=False)


# ---- references ---------------------------------------------------------------------------------


def write_npz(path, arrays):
    """np.savez stamps each entry with the current time; a fixed one keeps reruns byte-identical."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name in sorted(arrays):
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.ascontiguousarray(arrays[name]), allow_pickle=False)
            info = zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, buf.getvalue())


def run_onnxruntime(path, feeds):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # one summation order: the same bytes on every rerun
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, feeds)))


def reference_shapes(spec, dynamic):
    if spec.kind == "image":
        return IMAGE_BATCHES if dynamic else [IMAGE_EXAMPLE]
    if spec.kind == "decoder_kv":
        return KV_SHAPES if dynamic else [KV_EXAMPLE]
    return TEXT_SHAPES if dynamic else [TEXT_EXAMPLE]


def shape_label(shape):
    return "x".join(str(s) for s in (shape if isinstance(shape, tuple) else (shape,)))


def write_references(spec, path, dynamic, torch_model):
    """One .npz per shape, `input.NAME` and `output.NAME` entries; onnxruntime's outputs, checked
    against PyTorch's own so a reference is never an exporter bug taken as truth."""
    import torch

    refs = []
    for k, shape in enumerate(reference_shapes(spec, dynamic)):
        rng = np.random.default_rng(1000 + 17 * k + len(spec.name))
        feeds = feeds_for(spec, shape, rng)
        got = run_onnxruntime(path, feeds)
        with torch.no_grad():
            want = torch_model(*(torch.from_numpy(feeds[n]) for n in spec.inputs))
        want = want if isinstance(want, tuple) else (want,)
        for name, w in zip(spec.outputs, want):
            g = got[name]
            if not np.allclose(g, w.numpy(), rtol=1e-3, atol=1e-4):
                raise RuntimeError(f"onnxruntime differs from PyTorch on {name} at {shape}: max abs "
                                   f"error {np.abs(g - w.numpy()).max():.3g}")
            if not np.isfinite(g).all() or g.std() < 1e-2:
                raise RuntimeError(f"{name} at {shape} is trivial (std {g.std():.3g})")
        ref = path.with_name(f"{path.stem}.ref{k}.npz")
        write_npz(ref, {**{f"input.{n}": v for n, v in feeds.items()},
                        **{f"output.{n}": v for n, v in got.items()}})
        refs.append({"file": ref.name, "shape": shape_label(shape)})
    return refs


GREEDY_PROMPT, GREEDY_STEPS = 5, 32


def write_greedy(path):
    """A greedy decode of GREEDY_STEPS tokens on onnxruntime, one token a step with the cache
    carried from present.* to past_key_values.*: `NAME.greedy.npz` holds the first step's inputs
    (the cache of a prompt, so every step has a past of at least one position), the tokens, and
    the prompt with the token chosen after it (for `weft decode DIR --prompt`)."""
    rng = np.random.default_rng(32)
    prompt = rng.integers(0, KV_SPEC.vocab, (1, GREEDY_PROMPT), dtype=np.int64)
    empty = np.zeros((1, KV_HEADS, 0, HEAD_DIM), np.float32)
    feeds = {"input_ids": prompt, "attention_mask": np.ones_like(prompt),
             "position_ids": np.arange(GREEDY_PROMPT, dtype=np.int64)[None],
             **{n: empty for n in KV_SPEC.inputs[3:]}}
    out = run_onnxruntime(path, feeds)
    token = out["logits"][:, -1].argmax(-1)[:, None].astype(np.int64)
    first, tokens = None, []
    for step in range(GREEDY_STEPS):
        past = GREEDY_PROMPT + step
        feeds = {"input_ids": token, "attention_mask": np.ones((1, past + 1), np.int64),
                 "position_ids": np.array([[past]], np.int64),
                 **{n: out[o] for n, o in zip(KV_SPEC.inputs[3:], KV_SPEC.outputs[1:])}}
        first = first or dict(feeds)
        out = run_onnxruntime(path, feeds)
        token = out["logits"][:, -1].argmax(-1)[:, None].astype(np.int64)
        tokens.append(int(token[0, 0]))
    if len(set(tokens)) < 4:
        raise RuntimeError(f"the greedy decode is trivial: {tokens}")
    greedy = path.with_name(f"{path.stem}.greedy.npz")
    write_npz(greedy, {**{f"input.{n}": v for n, v in first.items()}, "tokens": np.array(tokens, np.int64),
                       "prompt": prompt[0], "prompt_token": first["input_ids"][0]})
    return {"file": greedy.name, "steps": GREEDY_STEPS}


def bounds_of(path):
    """weft's --bound per dim_param of the graph inputs: batch <= 4, sequences <= the models' max
    positions, so weft plans memory for the model's real range, not its default 4096."""
    import onnx

    m = onnx.load(str(path), load_external_data=False)
    out = {}
    for vi in m.graph.input:
        for axis, d in enumerate(vi.type.tensor_type.shape.dim):
            if d.dim_param:
                out[d.dim_param] = BATCH_BOUND if axis == 0 else MAX_POSITIONS
    return dict(sorted(out.items()))


# ---- driver -------------------------------------------------------------------------------------

EXPORTS = [("classic", True), ("classic", False), ("dynamo", True), ("dynamo", False)]
# The one model written as PyTorch writes large ones: weights in FILE.onnx.data beside it.
EXTERNAL = "resnet_dynamo_dynamic_external"


def corpus_entries():
    for spec in SPECS:
        for exporter, dynamic in EXPORTS:
            yield spec, exporter, dynamic, f"{spec.name}_{exporter}_{'dynamic' if dynamic else 'fixed'}", False
    yield SPECS[3], "dynamo", True, EXTERNAL, True
    for exporter in ("classic", "dynamo"):
        yield KV_SPEC, exporter, True, f"llama_kv_{exporter}_dynamic", False


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", type=pathlib.Path, default=OUT)
    p.add_argument("--only", default="", help="comma-separated model names (default: all)")
    a = p.parse_args()
    import onnx
    import onnxruntime
    import torch
    import torchvision
    import transformers

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    a.out.mkdir(parents=True, exist_ok=True)
    only = set(filter(None, a.only.split(",")))
    if not only:  # a full run leaves no file of a model the script no longer writes
        for pattern in ("*.onnx", "*.onnx.data", "*.npz", "models.json"):
            for old in a.out.glob(pattern):
                old.unlink()
    manifest_path = a.out / "models.json"
    manifest = json.loads(manifest_path.read_text()) if only and manifest_path.exists() else {}
    manifest["versions"] = {"torch": torch.__version__, "transformers": transformers.__version__,
                            "torchvision": torchvision.__version__, "onnx": onnx.__version__,
                            "onnxruntime": onnxruntime.__version__}
    models = manifest.setdefault("models", {})
    built = {}
    for spec, exporter, dynamic, name, external in corpus_entries():
        if only and name not in only:
            continue
        path = a.out / f"{name}.onnx"
        for old in a.out.glob(f"{name}.*"):
            old.unlink()
        entry = {"architecture": spec.name, "exporter": exporter,
                 "opset": 17 if exporter == "classic" else 18, "dynamic": dynamic,
                 "inputs": spec.inputs, "outputs": spec.outputs}
        try:
            if spec.name not in built:
                built[spec.name] = spec.build()
            model = built[spec.name]
            export(spec, model, exporter, dynamic, path, external)
            normalize(path)
            entry["files"] = sorted(f.name for f in a.out.glob(f"{name}.onnx*"))
            entry["bounds"] = bounds_of(path)
            entry["references"] = write_references(spec, path, dynamic, model)
            if spec.kind == "decoder_kv":
                entry["greedy"] = write_greedy(path)
            print(f"{name}: {sum((a.out / f).stat().st_size for f in entry['files'])} bytes, "
                  f"{len(entry['references'])} references", flush=True)
        except Exception as e:  # an exporter that cannot handle an architecture is a finding
            for old in a.out.glob(f"{name}.*"):
                old.unlink()
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            entry = {**entry, "export_error": f"{type(e).__name__}: {first[:300]}"}
            print(f"{name}: export failed: {entry['export_error']}", file=sys.stderr, flush=True)
            if os.environ.get("ONNX_CORPUS_TRACEBACK"):
                traceback.print_exc()
        models[name] = entry
    manifest["models"] = dict(sorted(models.items()))
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")


if __name__ == "__main__":
    main()
