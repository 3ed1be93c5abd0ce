#!/usr/bin/env python3
"""Recomputes a decoder layer from the files `kernbench run --kernel decoder_layer --data
--outputs DIR` writes (a decode step or a prefill), with numpy in float64 and Hugging Face
Llama's conventions (RMSNorm, rotate-half RoPE, grouped-query causal attention, SwiGLU),
and compares it with the run's y.npy, k_new.npy and v_new.npy.

    scripts/layer_from_files.py DIR [--tolerance 0.01]

Prints the largest error of each against the largest magnitude of the recomputed value,
and exits 1 when one is over the tolerance (bf16 weights, caches and activations make
errors of a few parts in a thousand)."""
import argparse
import json
import os
import sys

import numpy as np


def load(folder, name):
    return np.load(os.path.join(folder, name + ".npy")).astype(np.float64)


def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def inv_freq(cfg):
    d = cfg["head_dim"]
    inv = cfg["rope_theta"] ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    s = cfg.get("rope_scaling")
    if not s:
        return inv
    low = s["original_max_position_embeddings"] / s["low_freq_factor"]
    high = s["original_max_position_embeddings"] / s["high_freq_factor"]
    wavelen = 2 * np.pi / inv
    smooth = (s["original_max_position_embeddings"] / wavelen - s["low_freq_factor"]) / (
        s["high_freq_factor"] - s["low_freq_factor"])
    blended = (1 - smooth) * inv / s["factor"] + smooth * inv
    return np.where(wavelen > low, inv / s["factor"], np.where(wavelen < high, inv, blended))


def rope(x, pos, inv):  # x [heads, d]
    angle = pos * inv
    cos, sin = np.cos(angle), np.sin(angle)
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--tolerance", type=float, default=0.01)
    args = ap.parse_args()
    f = args.dir
    cfg = json.load(open(os.path.join(f, "config.json")))
    if cfg["norm"] != "rms" or cfg["mlp"] != "swiglu" or cfg["block"] != "sequential":
        sys.exit("this script recomputes Llama-form layers (RMSNorm, SwiGLU, sequential)")
    x, positions = load(f, "x"), load(f, "positions")
    hq, hkv, d = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps, inv = cfg["rms_norm_eps"], inv_freq(cfg)
    w = {n: load(f, n) for n in ["input_layernorm", "q_proj", "k_proj", "v_proj", "o_proj",
                                  "post_attention_layernorm", "gate_proj", "up_proj", "down_proj"]}
    group = hq // hkv
    ys, ks, vs = [], [], []
    first = 0
    # Request r's new tokens are rows [first, first + new) of x: each attends to the cache
    # and to the new tokens up to itself.
    for r, new in enumerate(cfg["new_tokens"]):
        rows = range(first, first + new)
        n = [rms_norm(x[t], w["input_layernorm"], eps) for t in rows]
        q = [rope((w["q_proj"] @ n[j]).reshape(hq, d), positions[t], inv) for j, t in enumerate(rows)]
        k = [rope((w["k_proj"] @ n[j]).reshape(hkv, d), positions[t], inv) for j, t in enumerate(rows)]
        v = [(w["v_proj"] @ n[j]).reshape(hkv, d) for j in range(new)]
        keys = np.concatenate([load(f, "k_cache_%d" % r), np.stack(k, axis=1)], axis=1)  # [H_kv, S, d]
        values = np.concatenate([load(f, "v_cache_%d" % r), np.stack(v, axis=1)], axis=1)
        held = keys.shape[1] - new
        for j, t in enumerate(rows):
            o = np.empty((hq, d))
            for h in range(hq):
                s = keys[h // group, :held + j + 1] @ q[j][h] / np.sqrt(d)
                p = np.exp(s - s.max())
                o[h] = p @ values[h // group, :held + j + 1] / p.sum()
            h1 = x[t] + w["o_proj"] @ o.reshape(-1)
            n2 = rms_norm(h1, w["post_attention_layernorm"], eps)
            gate, up = w["gate_proj"] @ n2, w["up_proj"] @ n2
            ys.append(h1 + w["down_proj"] @ (gate / (1 + np.exp(-gate)) * up))
            ks.append(k[j])
            vs.append(v[j])
        first += new
    worst = 0.0
    for name, want in [("y", np.array(ys)), ("k_new", np.array(ks)), ("v_new", np.array(vs))]:
        got = load(f, name)
        err = np.abs(got - want).max() / np.abs(want).max()
        worst = max(worst, err)
        print("%-6s max |run - numpy| / max |numpy| = %.3g" % (name, err))
    sys.exit(0 if worst <= args.tolerance else 1)


if __name__ == "__main__":
    main()
