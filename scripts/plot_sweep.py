#!/usr/bin/env python3
"""Plots a `kernbench bench gqa_llama70b` sweep (sweep.json) as PNG and SVG:
  headline          decode (C = P = 8) and prefill (zigzag) efficiency vs S
  decode_latency    decode latency vs S, a line per (C, P): the SP-enable sweep
  decode_efficiency decode HBM-roofline efficiency vs S, a line per (C, P)
  prefill           prefill latency and GEMM-roofline efficiency vs S, zigzag vs contiguous
  chunked           chunked prefill: GEMM-roofline efficiency of pass-KV and pass-Q per (S, T_q)
  batch             batched decode: tokens/s and HBM-roofline efficiency vs batch size

usage: plot_sweep.py SWEEP.json [OUTDIR]   (default OUTDIR: docs/img)
"""
import os
import sys

import sweep_rows
from figures import plt, save


def side_by_side(axes, xlabel):
    """Two panels over a log2 x axis: each (axis, y label) with grid and legend."""
    for ax, label in axes:
        ax.set_xscale("log", base=2)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()


def us(row):
    return row["simulated_seconds"] * 1e6


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__.strip().splitlines()[-1])
    path, outdir = sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else "docs/img"
    try:
        _, rows = sweep_rows.load(path)
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"plot_sweep: {path}: not a sweep file ({e})")
    os.makedirs(outdir, exist_ok=True)
    decode = [r for r in rows if r["part"] == "decode"]
    prefill = [r for r in rows if r["part"] == "prefill"]
    cps = sorted({(r["knobs"]["cubes_per_group"], r["knobs"]["pes"]) for r in decode})

    def series(sel, y):
        pts = sorted((r["knobs"]["seq_len"], y(r)) for r in sel)
        return [p[0] for p in pts], [p[1] for p in pts]

    for name, y, label, log_y in (("decode_latency", us, "latency (us)", True),
                                  ("decode_efficiency", lambda r: 100 * r["roofline_efficiency"],
                                   "HBM-roofline efficiency (%) of the PEs used", False)):
        fig, ax = plt.subplots(figsize=(9, 5.5))
        ax.set_prop_cycle(color=plt.cm.tab20.colors)  # 16 (C, P) lines, each its own colour
        for c, p in cps:
            sel = [r for r in decode if (r["knobs"]["cubes_per_group"], r["knobs"]["pes"]) == (c, p)]
            x, v = series(sel, y)
            ax.plot(x, v, marker="o", markersize=3, lw=2.2 if (c, p) == (8, 8) else 1,
                    label=f"C={c} P={p}")
        ax.set_xscale("log", base=2)
        if log_y:
            ax.set_yscale("log")
        ax.set_xlabel("context S (tokens)")
        ax.set_ylabel(label)
        ax.set_title(f"GQA decode, Llama-3-70B, 4 SIPs: {label} by (C, P)")
        ax.legend(fontsize=7, ncol=4)
        ax.grid(True, which="both", alpha=0.3)
        save(fig, outdir, name)

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.8))
    for layout in ("zigzag", "contiguous"):
        sel = [r for r in prefill if r["knobs"]["layout"] == layout]
        a1.plot(*series(sel, us), marker="o", label=layout)
        a2.plot(*series(sel, lambda r: 100 * r["roofline_efficiency"]), marker="o", label=layout)
    side_by_side(((a1, "latency (us)"), (a2, "GEMM-roofline efficiency (%)")), "context S = T_q (tokens)")
    a1.set_yscale("log")
    fig.suptitle("GQA prefill, Llama-3-70B, causal, 4 SIPs: zigzag vs contiguous query rows")
    save(fig, outdir, "prefill")

    fig, ax = plt.subplots(figsize=(9, 5))
    head = [r for r in decode if r["headline"]]
    ax.plot(*series(head, lambda r: 100 * r["roofline_efficiency"]), marker="o",
            label="decode, C = P = 8 (HBM roofline)")
    zig = [r for r in prefill if r["knobs"]["layout"] == "zigzag"]
    ax.plot(*series(zig, lambda r: 100 * r["roofline_efficiency"]), marker="s",
            label="prefill, zigzag (GEMM roofline)")
    ax.axhline(90, color="grey", ls=":", lw=1)
    ax.axhline(80, color="grey", ls=":", lw=1)
    ax.set_xscale("log", base=2)
    ax.set_ylim(0, 100)
    ax.set_xlabel("context S (tokens)")
    ax.set_ylabel("% of the modelled machine's roofline")
    ax.set_title("Llama-3-70B attention on 4 AHBM SIPs (512 PEs)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    save(fig, outdir, "headline")
    names = "headline, decode_latency, decode_efficiency, prefill"

    chunked = [r for r in rows if r["part"] == "chunked"]
    if chunked:
        cases = sorted({(r["knobs"]["seq_len"], r["knobs"]["q_len"]) for r in chunked})
        fig, ax = plt.subplots(figsize=(9, 5))
        width = 0.38
        for i, (ring, label) in enumerate((("kv", "pass-KV (K, V travel)"), ("q", "pass-Q (queries, state travel)"))):
            eff = []
            for case in cases:
                sel = [r for r in chunked if (r["knobs"]["seq_len"], r["knobs"]["q_len"]) == case
                       and r["knobs"]["ring"] == ring]
                eff.append(100 * sel[0]["roofline_efficiency"] if sel else 0)
            ax.bar([j + (i - 0.5) * width for j in range(len(cases))], eff, width, label=label)
        ax.set_xticks(range(len(cases)))
        ax.set_xticklabels([f"T_q {t} / S {s // 1024}K" for s, t in cases])
        ax.set_ylim(0, 100)
        ax.set_ylabel("GEMM-roofline efficiency (%)")
        ax.set_title("Chunked prefill, Llama-3-70B, causal, 4 SIPs: which ring")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend()
        save(fig, outdir, "chunked")
        names += ", chunked"
    batch = [r for r in rows if r["part"] == "batch"]
    if batch:
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.8))
        for lens in sorted({r["values"]["batch"].split(":", 2)[2] for r in batch}):  # "random:N:MIN-MAX:SEED"
            sel = sorted((r for r in batch if r["values"]["batch"].split(":", 2)[2] == lens),
                         key=lambda r: r["knobs"]["batch"])
            lo_hi, seed = lens.split(":")
            label = f"lengths {lo_hi} (seed {seed})"
            a1.plot([r["knobs"]["batch"] for r in sel], [r["tokens_per_second"] for r in sel], marker="o", label=label)
            a2.plot([r["knobs"]["batch"] for r in sel], [100 * r["roofline_efficiency"] for r in sel], marker="o",
                    label=label)
        side_by_side(((a1, "tokens per second"), (a2, "HBM-roofline efficiency (%) of every PE")),
                     "batch B (requests, T_q = 1)")
        a1.set_yscale("log")
        a2.set_ylim(0, 100)
        fig.suptitle("Batched GQA decode, Llama-3-70B, paged KV cache, 4 SIPs: throughput and efficiency by batch")
        save(fig, outdir, "batch")
        names += ", batch"
    print(f"plot_sweep: wrote {names} (.png, .svg) in {outdir}")


if __name__ == "__main__":
    main()
