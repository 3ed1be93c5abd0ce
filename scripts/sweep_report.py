#!/usr/bin/python3
"""Analyses a finished `kernbench sweep` (DIR/sweep.json). Writes DIR/report.md and
DIR/report.json, and plots as PNG and SVG in DIR/plots:
  elasticities  for each swept topology value (a set.* key): the percentage change in
                latency, and in energy, per percentage change in the value, per part,
                kernel and length, between neighbouring values and as the log-log slope
                over all of them
  roofline      achieved FLOP/s and HBM bytes/s against arithmetic intensity (FLOPs per
                HBM byte), with the two ceilings of each machine swept
  <key>         latency against each swept quantity: a panel per part and setting of the
                other swept numbers that are not hardware values (seq-len), a line per
                setting of the rest (hardware values, models, layouts)

usage: sweep_report.py DIR   (`kernbench sweep --report DIR` runs it)
"""
import json
import math
import os
import sys

import sweep_rows
from figures import plt, save


def latency(row):
    return row["result"].get("simulated_cycles")


def energy(row):
    return row["result"].get("energy", {}).get("total_joules")


def others(row, key):
    """The row's values other than `key`, as a sortable label."""
    return tuple((k, str(v)) for k, v in row["values"].items() if k != key)


def slope(points):
    """Least-squares slope of ln(latency) on ln(value)."""
    xs = [math.log(v) for v, _ in points]
    ys = [math.log(y) for _, y in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def series(rows, key, measure=latency):
    """Rows grouped by part and the other values: (part, others) -> [(value, measure, row)], by value."""
    groups = {}
    for r in rows:
        v, y = r["numbers"].get(key), measure(r)
        if v is None or v <= 0 or not y:
            continue
        groups.setdefault((r["part"], others(r, key)), []).append((v, y, r))
    def order(item):  # by part, then the other values as numbers where they are quantities
        (part, rest), pts = item
        numbers = pts[0][2]["numbers"]
        return part, [(k, numbers.get(k, 0), v) for k, v in rest]
    return {g: sorted(pts, key=lambda p: p[0]) for g, pts in sorted(groups.items(), key=order)
            if len({p[0] for p in pts}) > 1}


def elasticities(rows, measure=latency):
    """For each swept topology value, per group: the points, each step's elasticity of the
    measure (latency, or energy) and the fit."""
    keys = sorted({k for r in rows for k in r["numbers"] if k.startswith("set.")})
    out = []
    for key in keys:
        for (part, rest), pts in series(rows, key, measure).items():
            res = pts[0][2]["result"]
            steps = [{"from": a[0], "to": b[0],
                      "elasticity": math.log(b[1] / a[1]) / math.log(b[0] / a[0])} for a, b in zip(pts, pts[1:])]
            out.append({"key": key, "part": part, "kernel": res["kernel"],
                        "seq_len": res["knobs"].get("seq_len"), "q_len": res["knobs"].get("q_len"),
                        "others": dict(rest), "values": [p[0] for p in pts], measure.__name__: [p[1] for p in pts],
                        "steps": steps, "elasticity": slope([(p[0], p[1]) for p in pts])})
    return out


def roofline_points(rows):
    """(intensity, FLOP/s, bytes/s, kernel, machine) of each row with FLOPs and HBM bytes."""
    out = []
    for r in rows:
        res = r["result"]
        flops, hbm = res.get("flops"), res.get("hbm_bytes")
        seconds = res.get("simulated_seconds")
        if not flops or not hbm or not seconds or "machine" not in res:
            continue
        m = res["machine"]
        out.append((flops / hbm, flops / seconds, hbm / seconds, res["kernel"],
                    (m["peak_flops_per_second"], m["hbm_bytes_per_second"])))
    return out


def plot_roofline(points, outdir):
    fig, (ax_f, ax_b) = plt.subplots(1, 2, figsize=(12, 4.8))
    xs = [p[0] for p in points]
    lo, hi = min(xs) / 4, max(xs) * 4
    machines = sorted({p[4] for p in points})
    for i, (peak, bw) in enumerate(machines):
        grid = [lo * (hi / lo) ** (k / 200) for k in range(201)]
        label = f"ceilings {peak / 1e12:.3g} TFLOP/s, {bw / 1e12:.3g} TB/s"
        ax_f.plot(grid, [min(peak, x * bw) for x in grid], color=f"C{i}", alpha=0.5, lw=1, label=label)
        ax_b.plot(grid, [min(bw, peak / x) for x in grid], color=f"C{i}", alpha=0.5, lw=1, label=label)
    # A point takes its machine's colour and its kernel's marker.
    for kernel, marker in zip(sorted({p[3] for p in points}), "os^Dv"):
        sel = [p for p in points if p[3] == kernel]
        colors = [f"C{machines.index(p[4])}" for p in sel]
        ax_f.scatter([p[0] for p in sel], [p[1] for p in sel], marker=marker, c=colors, s=22, label=kernel)
        ax_b.scatter([p[0] for p in sel], [p[2] for p in sel], marker=marker, c=colors, s=22, label=kernel)
    for ax, label in ((ax_f, "achieved FLOP/s"), (ax_b, "achieved HBM bytes/s")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("arithmetic intensity (FLOPs per HBM byte)")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    save(fig, outdir, "roofline")


def plot_lines(rows, outdir):
    """Latency against each swept quantity (log-log): a panel per part and setting of the
    other swept numbers that are not hardware values, a line per setting of the rest."""
    names = []
    for key in sorted({k for r in rows for k in r["numbers"]}):
        groups = series(rows, key)
        if not groups:
            continue
        panels = {}
        for (part, rest), pts in groups.items():
            # A panel per part and length-like value (a swept number that is not hardware,
            # e.g. seq-len); a line per setting of the rest (hardware values, models, layouts).
            numeric = {k for k in pts[0][2]["numbers"]}
            in_panel = [(k, v) for k, v in rest if k in numeric and not k.startswith("set.")]
            in_line = [(k[4:] if k.startswith("set.") else k, v) for k, v in rest if (k, v) not in in_panel]
            panel = (part, tuple(pts[0][2]["numbers"][k] for k, _ in in_panel),
                     " ".join([part] + [f"{k}={v}" for k, v in in_panel]).strip())
            line = " ".join(f"{k}={v}" for k, v in in_line) or key
            panels.setdefault(panel, []).append((line, pts))
        cols = min(2, len(panels))
        nrows = (len(panels) + cols - 1) // cols
        fig, axes = plt.subplots(nrows, cols, figsize=(6.5 * cols, 4.2 * nrows), squeeze=False)
        for ax, ((_, _, panel), lines) in zip(axes.flat, sorted(panels.items())):
            if len(lines) > 10:  # the default cycle has 10 colours
                ax.set_prop_cycle(color=plt.cm.tab20.colors)
            for label, pts in lines:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=label)
            ax.set_title(panel or key, fontsize=9)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel(key)
            ax.set_ylabel("latency (cycles)")
            ax.grid(True, which="both", alpha=0.3)
            if len(lines) <= 16:
                ax.legend(fontsize=6)
        for ax in list(axes.flat)[len(panels):]:
            ax.set_visible(False)
        name = key.replace("/", "_")
        save(fig, outdir, name)
        names.append(name)
    return names


def elasticity_table(found, measure, unit, form):
    if not found:
        return ["No topology value (set.*) was swept over two or more values."]
    out = [f"| value | part | kernel | S | other values | values | {measure} ({unit}) | each step | fit |",
           "|---|---|---|---|---|---|---|---|---|"]
    for e in found:
        rest = ", ".join(f"{k}={v}" for k, v in e["others"].items())
        vals = ", ".join(f"{v:g}" for v in e["values"])
        ys = ", ".join(form(v) for v in e[measure])
        steps = ", ".join(f"{s['elasticity']:+.2f}" for s in e["steps"])
        out.append(f"| {e['key']} | {e['part']} | {e['kernel']} | {e['seq_len']} | {rest} | {vals} | {ys} "
                   f"| {steps} | {e['elasticity']:+.2f} |")
    return out


def markdown(sweep, found, found_energy, plots):
    out = [f"# Sweep {sweep['sweep']}", "",
           f"{len(sweep['rows'])} of {sweep['points']} points, from `{sweep['spec']}`.", "",
           "## Elasticity of latency", "",
           "The percentage change in latency per percentage change in a swept topology value:",
           "-1 means latency falls in proportion as the value grows (the value is the bottleneck),",
           "0 that it does not matter. Each step is between neighbouring values; the fit is the",
           "log-log slope over all of them.", ""]
    out += elasticity_table(found, "latency", "cycles", lambda v: f"{v:,}")
    out += ["", "## Elasticity of energy", "",
            "The same for the run's energy (docs/energy.md): a price swept gives the share of the",
            "energy its cause has; a hardware value the energy it saves or costs.", ""]
    out += elasticity_table(found_energy, "energy", "J", lambda v: f"{v:.4g}")
    out += ["", "## Plots", ""] + [f"![{p}](plots/{p}.svg)" for p in plots]
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    folder = sys.argv[1]
    try:
        sweep, _ = sweep_rows.load(os.path.join(folder, "sweep.json"))
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"sweep_report: {folder}: not a finished sweep ({e})")
    rows = sweep["rows"]
    outdir = os.path.join(folder, "plots")
    os.makedirs(outdir, exist_ok=True)
    found = elasticities(rows)
    found_energy = elasticities(rows, energy)
    plots = []
    points = roofline_points(rows)
    if points:
        plot_roofline(points, outdir)
        plots.append("roofline")
    plots += plot_lines(rows, outdir)
    report = {"sweep": sweep["sweep"], "elasticities": found, "energy_elasticities": found_energy, "plots": plots}
    for name, text in (("report.json", json.dumps(report, indent=1) + "\n"),
                       ("report.md", markdown(sweep, found, found_energy, plots))):
        with open(os.path.join(folder, name + ".tmp"), "w") as f:
            f.write(text)
        os.replace(os.path.join(folder, name + ".tmp"), os.path.join(folder, name))
    print(f"sweep_report: {len(found)} elasticity series, plots {', '.join(plots) or 'none'}; "
          f"{os.path.join(folder, 'report.md')}")


if __name__ == "__main__":
    main()
