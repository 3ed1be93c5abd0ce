#!/usr/bin/env python3
"""What bf16 state messages would do to decode's error (docs/gqa_decode.md, Reduce to root).

A host-side numpy model of one KV head's decode: G query rows, S keys over 64 ranks (bf16
inputs, fp32 partial states, P cast to bf16 before P.V, as the kernel does), reduced on a
binary tree of 6 levels (a state row crosses 3 Level-2 and 3 Level-1 messages), O divided
by l and stored in bf16. It prints the max error against fp64 with fp32 messages (today)
and with O rounded to bf16 in every message (m and l kept fp32), beside the naive bf16
error and the FlashAttention tolerance (2x naive + 1e-5) that --check applies.

    /usr/bin/python3 scripts/state_bf16_error.py
"""
import numpy as np

RANKS, G, D = 64, 8, 128


def bf16(x):
    """Round float32 to the nearest bf16 (ties to even), returned as float32."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return bits.astype(np.uint32).view(np.float32)


def naive_bf16(q, k, v, scale):
    """The reference's naive attention: every intermediate rounded to bf16."""
    s = bf16(bf16(q.astype(np.float64) @ k.T.astype(np.float64)) * scale).astype(np.float64)
    p = bf16(np.exp(s - s.max(1, keepdims=True))).astype(np.float64)
    p = bf16(p / p.sum(1, keepdims=True)).astype(np.float64)
    return bf16(p @ v.astype(np.float64))


def decode(q, k, v, scale, message):
    """Per-rank online-softmax states merged pairwise; `message` rounds a sent O."""
    qb, kb, vb = bf16(q), bf16(k), bf16(v)
    rows = k.shape[0] // RANKS
    states = []
    for r in range(RANKS):
        kk, vv = kb[r * rows:(r + 1) * rows], vb[r * rows:(r + 1) * rows]
        s = (qb @ kk.T) * np.float32(scale)
        m = s.max(1)
        p = np.exp(s - m[:, None]).astype(np.float32)
        states.append((bf16(p) @ vv, p.sum(1), m))
    while len(states) > 1:
        merged = []
        for (oa, la, ma), (ob, lb, mb) in zip(states[0::2], states[1::2]):
            m = np.maximum(ma, mb)
            ea, eb = np.exp(ma - m), np.exp(mb - m)
            merged.append(((oa * ea[:, None] + message(ob) * eb[:, None]).astype(np.float32),
                           (la * ea + lb * eb).astype(np.float32), m))
        states = merged
    o, l, _ = states[0]
    return bf16(o / l[:, None])


def main():
    rng = np.random.default_rng(7)
    print("| S | naive bf16 error | tolerance | fp32 messages | bf16 O in messages |")
    print("|---|---|---|---|---|")
    for s_len in (1024, 4096, 32768):
        for _ in range(3):
            q, k, v = (rng.standard_normal(shape).astype(np.float32) for shape in ((G, D), (s_len, D), (s_len, D)))
            scale = 1 / np.sqrt(D)
            sc = (q.astype(np.float64) @ k.T.astype(np.float64)) * scale
            p = np.exp(sc - sc.max(1, keepdims=True))
            exact = (p / p.sum(1, keepdims=True)) @ v.astype(np.float64)
            naive = np.abs(naive_bf16(q, k, v, scale) - exact).max()
            fp32 = np.abs(decode(q, k, v, scale, lambda o: o) - exact).max()
            half = np.abs(decode(q, k, v, scale, bf16) - exact).max()
            print(f"| {s_len} | {naive:.2e} | {2 * naive + 1e-5:.2e} | {fp32:.2e} | {half:.2e} |")


if __name__ == "__main__":
    main()
