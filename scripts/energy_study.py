#!/usr/bin/python3
"""The energy study of docs/energy.md from a finished `kernbench sweep
sweeps/energy_llama70b.yaml --out DIR`: joules per token against batch, by cause, for the
whole decode step and for one layer's attention. Prints the table (markdown) and writes
OUT.png and OUT.svg.

usage: energy_study.py DIR OUT
"""
import os
import sys

import sweep_rows
from figures import plt, save

CAUSES = ["hbm", "tcm", "fabric", "noc", "link", "gemm", "math", "cpu", "static"]


def requests(row):
    """A row's batch: its requests, from the spec's `random:N:...` form."""
    return int(str(row["values"]["batch"]).split(":")[1])


def per_token(rows, part):
    """[(batch, seconds a token, {cause: joules a token})] of a part, by batch."""
    out = []
    for r in rows:
        if r["part"] != part or "energy" not in r:
            continue
        n = requests(r)
        seconds = r["step"]["seconds"] if "step" in r else r["simulated_seconds"]
        out.append((n, seconds, {c: r["energy"]["by_cause"][c] / n for c in CAUSES}))
    return sorted(out, key=lambda p: p[0])


def table(points, what):
    lines = [f"| {what}: batch | step (ms) | J a token | " + " | ".join(CAUSES) + " |",
             "|---" * (3 + len(CAUSES)) + "|"]
    for n, seconds, by in points:
        total = sum(by.values())
        lines.append(f"| {n} | {1e3 * seconds:.4g} | {total:.4g} | " +
                     " | ".join(f"{100 * by[c] / total:.1f}%" for c in CAUSES) + " |")
    return "\n".join(lines)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    folder, out = sys.argv[1:]
    try:
        _, rows = sweep_rows.load(os.path.join(folder, "sweep.json"))
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"energy_study: {folder}: not a finished sweep ({e})")
    parts = [("step", "Llama-3-70B decode step (80 layers), 8K context"),
             ("attention", "one layer's attention alone, 8K context")]
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.6))
    for ax, (part, title) in zip(axes, parts):
        points = per_token(rows, part)
        if not points:
            ax.set_visible(False)
            continue
        print(table(points, part) + "\n")
        xs = [str(p[0]) for p in points]
        bottom = [0.0] * len(points)
        for i, c in enumerate(CAUSES):
            ys = [p[2][c] for p in points]
            if not any(ys):
                continue
            ax.bar(xs, ys, bottom=bottom, label=c, color=f"C{i}")
            bottom = [b + y for b, y in zip(bottom, ys)]
        ax.set_xlabel("batch (requests)")
        ax.set_ylabel("joules a token")
        ax.set_title(title, fontsize=9)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=7)
    save(fig, os.path.dirname(out) or ".", os.path.basename(out))
    print(f"energy_study: {out}.png and {out}.svg")


if __name__ == "__main__":
    main()
