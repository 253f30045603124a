#!/usr/bin/env python3
"""Independent NumPy implementation of examples/models/tiny_llama.wmod, and the check that runs
the model with `weft model run` (prefill, then decode steps that feed the KV cache back) at several
shape bindings and compares every output with this reference.

usage: tiny_llama_reference.py WEFT_BINARY WORK_DIR [--seed N] [--poison] [--compiled DIR]
                               [--dtype f16|bf16]
--poison runs weft with planned storage poisoned with NaN as tensors die; --compiled DIR runs the
directory `weft compile tiny_llama.wmod -o DIR` wrote (`weft run DIR`) instead of the module.
--dtype runs a variant of the module with every f32 tensor of that dtype instead (written to
WORK_DIR), with the weights rounded to the dtype, against this f64 reference on the same weights:
outputs must match within the dtype's tolerance, and differ from the reference by more than f32's
(the VM stores every tensor in its dtype). Each call's inputs stay in WORK_DIR as
FUNCTION_bB_nN_pP.npz (for `weft bench DIR --inputs`).
Exit status 0 when every output matches within tolerance, 1 otherwise."""
import subprocess
import sys

import numpy as np

D, H, KVH, HD, FFN, VOCAB, LAYERS = 64, 4, 2, 16, 96, 128, 2
EPS, THETA = 1e-6, 10000.0
# Largest |weft - reference| / max(1, max |reference|) accepted, per dtype: f32 leaves room for
# sums of many terms; f16 and bf16 sixteen unit roundoffs (2^-11, 2^-8), as interp/compare.h's
# tolerance_for, for the roundings of every stored tensor through two layers (measured: 1.6e-3
# and 1.3e-2 at seed 0).
TOLERANCE = {"f32": 2e-4, "f16": 16 * 2.0 ** -11, "bf16": 16 * 2.0 ** -8}


def to_f32(x):
    """`x` rounded to f32 (to nearest even), as f64."""
    return np.asarray(x, np.float64).astype(np.float32).astype(np.float64)


def to_f16(x):
    """`x` as weft stores it in f16: rounded to f32, then to IEEE binary16 (nearest even)."""
    with np.errstate(over="ignore"):  # overflow to infinity is the rounding's result
        return to_f32(x).astype(np.float16).astype(np.float64)


def to_bf16(x):
    """`x` as weft stores it in bf16: rounded to f32, then the f32 bits to their upper 16 (nearest
    even; overflow gives infinity, NaN stays NaN)."""
    f = np.asarray(x, np.float64).astype(np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    out = bits.astype(np.uint32).view(np.float32).astype(np.float64)
    return np.where(np.isnan(f), np.nan, out)


ROUND = {"f32": to_f32, "f16": to_f16, "bf16": to_bf16}


def make_weights(seed):
    rng = np.random.default_rng(seed)
    w = {"embed": rng.standard_normal((VOCAB, D)), "fnorm": 1 + 0.1 * rng.standard_normal((1, 1, D)),
         "lm_head": rng.standard_normal((1, D, VOCAB)) / np.sqrt(D)}
    for l in range(LAYERS):
        w[f"an{l}"] = 1 + 0.1 * rng.standard_normal((1, 1, D))
        w[f"wq{l}"] = rng.standard_normal((1, D, H * HD)) / np.sqrt(D)
        w[f"wk{l}"] = rng.standard_normal((1, D, KVH * HD)) / np.sqrt(D)
        w[f"wv{l}"] = rng.standard_normal((1, D, KVH * HD)) / np.sqrt(D)
        w[f"qn{l}"] = 1 + 0.1 * rng.standard_normal((1, 1, 1, HD))
        w[f"kn{l}"] = 1 + 0.1 * rng.standard_normal((1, 1, 1, HD))
        w[f"wo{l}"] = rng.standard_normal((1, H * HD, D)) / np.sqrt(H * HD)
        w[f"mn{l}"] = 1 + 0.1 * rng.standard_normal((1, 1, D))
        w[f"wg{l}"] = rng.standard_normal((1, D, FFN)) / np.sqrt(D)
        w[f"wu{l}"] = rng.standard_normal((1, D, FFN)) / np.sqrt(D)
        w[f"wd{l}"] = rng.standard_normal((1, FFN, D)) / np.sqrt(FFN)
    return {k: v.astype(np.float32) for k, v in w.items()}


def rms_norm(x, g):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS) * g.reshape(-1)


def rope(x, start):  # x: [b, s, heads, hd], HF rotate-half convention
    s = x.shape[1]
    inv = THETA ** (-np.arange(0, HD, 2, dtype=np.float64) / HD)
    ang = np.outer(np.arange(start, start + s), inv)  # [s, hd/2]
    cos = np.concatenate([np.cos(ang)] * 2, axis=-1)[None, :, None, :]
    sin = np.concatenate([np.sin(ang)] * 2, axis=-1)[None, :, None, :]
    half = HD // 2
    rot = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return x * cos + rot * sin


def forward(w, tokens, start, cache):
    """tokens [b, s] at positions start..; cache: per layer (k, v) as [b, p, KVH, HD] or None."""
    x = w["embed"][tokens].astype(np.float64)
    b, s = tokens.shape
    new_cache = []
    for l in range(LAYERS):
        h = rms_norm(x, w[f"an{l}"])
        q = (h @ w[f"wq{l}"][0]).reshape(b, s, H, HD)
        k = (h @ w[f"wk{l}"][0]).reshape(b, s, KVH, HD)
        v = (h @ w[f"wv{l}"][0]).reshape(b, s, KVH, HD)
        q = rope(rms_norm(q, w[f"qn{l}"]), start)
        k = rope(rms_norm(k, w[f"kn{l}"]), start)
        if cache is not None:
            k = np.concatenate([cache[l][0], k], axis=1)
            v = np.concatenate([cache[l][1], v], axis=1)
        new_cache.append((k, v))
        t = k.shape[1]
        kk = np.repeat(k, H // KVH, axis=2)  # query head j uses kv head j // (H / KVH)
        vv = np.repeat(v, H // KVH, axis=2)
        scores = np.einsum("bshd,bthd->bhst", q, kk) / np.sqrt(HD)
        mask = np.arange(t)[None, :] > (np.arange(s)[:, None] + t - s)
        scores = np.where(mask, -np.inf, scores)
        scores -= scores.max(axis=-1, keepdims=True)
        p = np.exp(scores)
        p /= p.sum(axis=-1, keepdims=True)
        o = np.einsum("bhst,bthd->bshd", p, vv).reshape(b, s, H * HD)
        x = x + o @ w[f"wo{l}"][0]
        h = rms_norm(x, w[f"mn{l}"])
        g = h @ w[f"wg{l}"][0]
        x = x + ((g / (1 + np.exp(-g))) * (h @ w[f"wu{l}"][0])) @ w[f"wd{l}"][0]
    logits = rms_norm(x, w["fnorm"]) @ w["lm_head"][0]
    return logits, new_cache


def weft_run(weft, wmod, function, args, work, flags, compiled=None):
    b, n = args["tokens"].shape
    inp = f"{work}/{function}_b{b}_n{n}_p{int(args['pos'])}.npz"
    out = f"{work}/{function}_out.npz"
    np.savez(inp, **args)
    command = ["run", compiled] if compiled else ["model", "run", wmod]
    subprocess.run([weft] + command + ["--function", function, "--inputs", inp,
                    "--outputs", out] + flags, check=True, stdout=subprocess.DEVNULL)
    r = np.load(out)
    return [r[f"result.{i}"] for i in range(5)]


def close(name, got, want, failures, dtype="f32", errors=None):
    err = np.max(np.abs(got - want)) / max(1.0, np.max(np.abs(want)))
    ok = got.shape == want.shape and err < TOLERANCE[dtype]
    print(f"  {name}: shape {got.shape}, max rel err {err:.2e} {'ok' if ok else 'MISMATCH'}")
    if not ok:
        failures.append(name)
    if errors is not None:
        errors.append(err)


def main():
    weft, work = sys.argv[1], sys.argv[2]
    seed = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv else 0
    flags = ["--poison"] if "--poison" in sys.argv else []
    compiled = sys.argv[sys.argv.index("--compiled") + 1] if "--compiled" in sys.argv else None
    dtype = sys.argv[sys.argv.index("--dtype") + 1] if "--dtype" in sys.argv else "f32"
    wmod = __file__.replace("tiny_llama_reference.py", "tiny_llama.wmod")
    w = make_weights(seed)
    if dtype != "f32":
        with open(wmod) as f:
            text = f.read().replace("f32[", f"{dtype}[")
        wmod = f"{work}/tiny_llama_{dtype}.wmod"
        with open(wmod, "w") as f:
            f.write(text)
    # The weights rounded to the dtype, for weft and the reference alike: what differs is then only
    # weft's rounding of every tensor it computes (an unrounded run would match to f32's level).
    wr = {k: ROUND[dtype](v) for k, v in w.items()}
    w = {k: v.astype(np.float32) for k, v in wr.items()}
    rng = np.random.default_rng(seed + 1)
    failures, errors = [], []
    # (batch, prompt length, decode steps of these lengths): three bindings of b and n, and p
    # growing with every step.
    for b, n, steps in [(1, 5, [1, 1, 1]), (2, 3, [1, 2, 1]), (3, 7, [1, 1])]:
        total = n + sum(steps)
        tokens = rng.integers(0, VOCAB, size=(b, total))
        print(f"b={b} prompt={n} steps={steps}")
        logits_all, _ = forward(wr, tokens, 0, None)  # the whole sequence at once
        assert np.std(logits_all) > 0.1, "trivial reference logits"
        got = weft_run(weft, wmod, "prefill", dict(w, tokens=tokens[:, :n].astype(np.int64),
                                                    pos=np.int64(0)), work, flags, compiled)
        ref_logits, ref_cache = forward(wr, tokens[:, :n], 0, None)
        close("prefill logits", got[0], ref_logits, failures, dtype, errors)
        for l in range(LAYERS):  # weft's cache is [b, KVH, p, HD]
            close(f"prefill k{l}", got[1 + 2 * l], ref_cache[l][0].transpose(0, 2, 1, 3), failures,
                  dtype, errors)
        cache = got[1:]
        p = n
        for s in steps:
            args = dict(w, tokens=tokens[:, p:p + s].astype(np.int64), pos=np.int64(p),
                        kc0=cache[0], vc0=cache[1], kc1=cache[2], vc1=cache[3])
            got = weft_run(weft, wmod, "decode", args, work, flags, compiled)
            close(f"decode p={p} n={s} logits", got[0], logits_all[:, p:p + s], failures, dtype,
                  errors)
            assert got[1].shape[2] == p + s, "the cache did not grow by the new tokens"
            cache = got[1:]
            p += s
    if dtype != "f32":
        # The rounding of every stored tensor must show: rounding only the outputs (to f16) or
        # nothing (bf16 outputs are written as f32) stays within one unit roundoff.
        unit = {"f16": 2.0 ** -11, "bf16": 2.0 ** -8}[dtype]
        print(f"largest error {max(errors):.2e}: {max(errors) / unit:.1f} unit roundoffs of {dtype}")
        if max(errors) <= 2 * unit:
            failures.append("no more than the outputs' rounding")
    if failures:
        print("FAILED:", ", ".join(failures))
        return 1
    print("all outputs match")
    return 0


if __name__ == "__main__":
    sys.exit(main())
