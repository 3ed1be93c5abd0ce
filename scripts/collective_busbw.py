#!/usr/bin/env python3
"""busbw against size per algorithm, as nccl-tests draws it: runs `kernbench run --kernel
collective` for each size and algorithm, prints a Markdown table (BENCHMARKS.md) and
draws OUTDIR/collective_busbw.png and .svg.

usage: collective_busbw.py KERNBENCH [OUTDIR]   (default OUTDIR: docs/img)
"""
import json
import subprocess
import sys
import tempfile

from figures import plt, save

SIZES = ["16KiB", "256KiB", "4MiB", "64MiB", "256MiB"]
ALGORITHMS = ["ring", "tree", "one_shot", "two_shot", "auto"]


def run(binary, size, algorithm):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run([binary, "run", "--kernel", "collective", "--op", "all_reduce", "--bytes", size,
                        "--algorithm", algorithm, "--json", f.name], check=True, stdout=subprocess.DEVNULL)
        return json.load(open(f.name))


def main():
    binary, outdir = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "docs/img"
    rows, curves = [], {a: [] for a in ALGORITHMS}
    for size in SIZES:
        for algorithm in ALGORITHMS:
            r = run(binary, size, algorithm)
            fig = r
            curves[algorithm].append(fig["busbw_gbs"])
            rows.append((size, algorithm, fig["algorithm"], r["simulated_cycles"], fig["busbw_gbs"],
                         fig["busbw_of_link_peak"], fig["busbw_of_algorithm_peak"]))
    print("| size | --algorithm | ran | simulated cycles | busbw GB/s | of link peak (450) | of algorithm peak |")
    print("|---|---|---|---|---|---|---|")
    for size, asked, ran, cycles, busbw, link, alg in rows:
        print(f"| {size} | {asked} | {ran} | {cycles:,} | {busbw:.1f} | {100 * link:.1f}% | {100 * alg:.1f}% |")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for algorithm in ALGORITHMS:
        ax.plot(range(len(SIZES)), curves[algorithm], marker="o", label=algorithm,
                linestyle="--" if algorithm == "auto" else "-")
    ax.axhline(450, color="grey", linewidth=0.8, label="link_peak_busbw (3 x 150 GB/s)")
    ax.set_xticks(range(len(SIZES)), SIZES)
    ax.set_xlabel("all_reduce size per rank (4 SIPs)")
    ax.set_ylabel("busbw (GB/s)")
    ax.set_title("all_reduce busbw on the default machine")
    ax.legend()
    ax.grid(alpha=0.3)
    save(fig, outdir, "collective_busbw")


if __name__ == "__main__":
    main()
