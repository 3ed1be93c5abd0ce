#!/usr/bin/python3
"""Plots a run's power and energy (docs/energy.md): power over time stacked by cause, the
SIPs summed (from `kernbench run --power-trace FILE.csv`), beside the run's energy by
cause (from its --json). Writes OUT.png and OUT.svg.

usage: plot_power.py POWER.csv RESULT.json OUT
"""
import csv
import json
import os
import sys

from figures import plt, save

CAUSES = ["hbm", "tcm", "fabric", "noc", "link", "gemm", "math", "cpu", "static"]


def power_over_time(path):
    """(window start cycles, {cause: watts summed over the SIPs}) from a power trace."""
    by_start = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            watts = by_start.setdefault(int(row["start_cycle"]), dict.fromkeys(CAUSES, 0.0))
            for c in CAUSES:
                watts[c] += float(row[c + "_W"])
    starts = sorted(by_start)
    return starts, {c: [by_start[s][c] for s in starts] for c in CAUSES}


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__.strip().splitlines()[-1])
    trace, result_file, out = sys.argv[1:]
    try:
        starts, watts = power_over_time(trace)
        with open(result_file) as f:
            result = json.load(f)
        energy = result["energy"]
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"plot_power: {e}")
    fig, (ax_p, ax_e) = plt.subplots(1, 2, figsize=(13, 4.4), gridspec_kw={"width_ratios": [3, 1]})
    shown = [c for c in CAUSES if any(watts[c])]
    clock = result["simulated_cycles"] / result["simulated_seconds"]
    colors = [f"C{CAUSES.index(c)}" for c in shown]  # a cause's colour in every plot
    ax_p.stackplot([s / clock * 1e6 for s in starts], [watts[c] for c in shown], labels=shown, colors=colors,
                   step="post")
    ax_p.set_xlabel("time (us)")
    ax_p.set_ylabel("power of the run's SIPs (W)")
    ax_p.set_title(f"{result['kernel']} on {result['topology']['name']}: "
                   f"{energy['average_watts']:.4g} W on average", fontsize=9)
    ax_p.legend(fontsize=7, loc="upper right")
    ax_p.grid(True, alpha=0.3)
    joules = [energy["by_cause"][c] for c in shown]
    ax_e.barh(shown, joules, color=colors)
    ax_e.invert_yaxis()
    ax_e.set_xlabel("energy (J)")
    total = energy["total_joules"]
    ax_e.set_title(f"{total:.4g} J" + (f", {energy['joules_per_token']:.4g} J a token"
                                       if "joules_per_token" in energy else ""), fontsize=9)
    for y, j in enumerate(joules):
        ax_e.text(j, y, f" {100 * j / total:.1f}%", va="center", fontsize=7)
    save(fig, os.path.dirname(out) or ".", os.path.basename(out))
    print(f"plot_power: {out}.png and {out}.svg")


if __name__ == "__main__":
    main()
