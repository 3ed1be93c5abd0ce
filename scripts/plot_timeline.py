#!/usr/bin/env python3
"""Draws a kernbench timeline (--timeline JSON, Chrome trace events) as a PNG/SVG picture:
one row per track (engine of a PE, or its phases), one bar per slice, message flows as
arrows. For a picture in the docs; open the JSON itself in Perfetto to explore a run.

usage: plot_timeline.py TRACE.json OUT.png [--sip N] [--tracks PREFIX]...
"""
import argparse
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLOURS = {"phase": "#bbbbbb", "cpu": "#8c564b", "dma": "#1f77b4", "gemm": "#d62728",
           "math": "#2ca02c", "ipcq": "#9467bd"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("out")
    ap.add_argument("--sip", type=int, default=0, help="the SIP (trace process) to draw")
    ap.add_argument("--tracks", action="append", default=[],
                    help="draw the tracks whose name starts with this (repeatable), e.g. cube(1,1).pe0")
    a = ap.parse_args()
    try:
        with open(a.trace) as f:
            events = json.load(f)["traceEvents"]
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"plot_timeline: {a.trace}: not a kernbench timeline ({e})")
    prefixes = a.tracks
    names = {e["tid"]: e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == a.sip}
    tids = sorted(t for t, n in names.items() if not prefixes or any(n.startswith(p) for p in prefixes))
    if not tids:
        sys.exit(f"plot_timeline: no track of SIP {a.sip} matches {a.tracks!r}")
    row = {t: i for i, t in enumerate(tids)}
    fig, ax = plt.subplots(figsize=(14, 0.45 * len(tids) + 1.2))
    end = 0.0
    for e in events:
        if e["ph"] != "X" or e["pid"] != a.sip or e["tid"] not in row:
            continue
        y, x0, w = row[e["tid"]], e["ts"], max(e["dur"], 1e-3)
        end = max(end, x0 + w)
        ax.broken_barh([(x0, w)], (y - 0.4, 0.8), facecolors=COLOURS.get(e["cat"], "#7f7f7f"),
                       edgecolor="black", linewidth=0.2)
        if e["cat"] == "phase":
            ax.text(x0 + w / 2, y, e["name"], ha="center", va="center", fontsize=7, clip_on=True)
    starts = {}
    for e in events:
        if e["ph"] == "s":
            starts[e["id"]] = e
        elif e["ph"] == "f" and e["id"] in starts:
            s = starts[e["id"]]
            if s["pid"] == a.sip == e["pid"] and s["tid"] in row and e["tid"] in row:
                ax.annotate("", xy=(e["ts"], row[e["tid"]]), xytext=(s["ts"], row[s["tid"]]),
                            arrowprops={"arrowstyle": "->", "color": "#ff7f0e", "lw": 0.8})
    ax.set_yticks(range(len(tids)))
    ax.set_yticklabels([names[t] for t in tids], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, end * 1.01)
    ax.set_xlabel("simulated time (us)")
    ax.set_title(f"kernbench timeline, sip{a.sip}: {a.trace.split('/')[-1]}", fontsize=10)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in COLOURS.values()]
    ax.legend(handles, list(COLOURS), loc="upper right", fontsize=7, ncol=6)
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)


if __name__ == "__main__":
    main()
