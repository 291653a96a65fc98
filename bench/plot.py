#!/usr/bin/env python3
# plot.py: draws the PNG plots of one device run from its raw JSON results
# (a folder bench/results/<date>-<commit>/, or a device script's OUT/results):
#   pointwise.png  bandwidth against size per graph, fhjit beside the copy
#                  kernels and Triton (fhjit_bench.json, triton.json)
#   ntt.png        NTT time against N per radix and row count, fhjit beside
#                  the CUDA baseline and the floors (ntt_bench.json,
#                  ntt_cuda.json)
# and, with --tables, prints the Markdown tables of bench/RESULTS.md from the
# same files. Needs matplotlib (Debian: apt-get install python3-matplotlib);
# not part of the tests.
#   bench/plot.py bench/results/<date>-<commit> [--out DIR] [--tables]
import argparse
import json
import os
import sys


def load(folder, name):
    """The "results" list of folder/name, [] when the file is missing."""
    path = os.path.join(folder, name)
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return json.load(f).get("results", [])


def run_info(folder):
    path = os.path.join(folder, "run.json")
    if not os.path.exists(path):
        return "commit ?"
    with open(path) as f:
        r = json.load(f)
    return "%s, commit %s, %s" % (r.get("gpu", "?"), r.get("commit", "?"), r.get("date", "?")[:10])


def kind(rows, k):
    return [r for r in rows if r.get("kind") == k]


def log2_axis(ax, values, what):
    ticks = sorted(set(values))
    ax.set_xticks(ticks)
    ax.set_xticklabels(["$2^{%d}$" % t for t in ticks])
    ax.set_xlabel(what)


# ------------------------------------------------------------------ plots

def plot_pointwise(plt, folder, out):
    fh, tr = load(folder, "fhjit_bench.json"), load(folder, "triton.json")
    kernels = kind(fh, "kernel")
    if not kernels:
        return None
    graphs = sorted({r["graph"] for r in kernels}, key=lambda g: [r["graph"] for r in kernels].index(g))
    fig, axes = plt.subplots(1, len(graphs), figsize=(5 * len(graphs), 4.2), sharey=True, squeeze=False)
    copies = sorted(kind(fh, "copy"), key=lambda r: r["log2"])
    tcopies = sorted(kind(tr, "copy"), key=lambda r: r["log2"])
    for ax, g in zip(axes[0], graphs):
        for src, label, style in ((kernels, "fhjit", "-"), (kind(tr, "kernel"), "Triton", "--")):
            for radix, marker, color in (("r32", "o", "C0"), ("r62", "s", "C1")):
                pts = sorted((r["log2"], r["GBps"]) for r in src
                             if r["graph"] == g and r["radix"] == radix)
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker=marker,
                            color=color, label="%s %s" % (label, radix),
                            markerfacecolor=color if label == "fhjit" else "none")
        if copies:
            ax.plot([r["log2"] for r in copies], [r["GBps"] for r in copies], ":", color="black",
                    label="fhjit's PTX copy")
        if tcopies:
            ax.plot([r["log2"] for r in tcopies], [r["GBps"] for r in tcopies], ":", color="grey",
                    label="torch copy")
        ax.set_title(g)
        log2_axis(ax, [r["log2"] for r in kernels], "elements")
        ax.grid(True, alpha=0.3)
    axes[0][0].set_ylabel("effective bandwidth, GB/s (bytes read + written once)")
    axes[0][0].set_ylim(bottom=0)
    axes[0][-1].legend(fontsize=8, loc="best")
    fig.suptitle("Pointwise graphs: " + run_info(folder))
    fig.tight_layout()
    path = os.path.join(out, "pointwise.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_ntt(plt, folder, out):
    fh = kind(load(folder, "ntt_bench.json"), "ntt")
    base = kind(load(folder, "ntt_cuda.json"), "ntt")
    if not fh and not base:
        return None
    configs = []
    for r in fh + base:
        c = (r["radix"], r["rows"])
        if c not in configs:
            configs.append(c)
    fig, axes = plt.subplots(1, len(configs), figsize=(5 * len(configs), 4.2), squeeze=False)
    for ax, (radix, rows) in zip(axes[0], configs):
        def series(src, key):
            pts = sorted((r["log2"], r[key]) for r in src
                         if r["radix"] == radix and r["rows"] == rows and key in r)
            return [p[0] for p in pts], [p[1] for p in pts]
        for src, label, style, color in ((fh, "fhjit", "-", "C0"), (base, "CUDA baseline", "--", "C1")):
            for key, marker in (("fwd_us", "o"), ("inv_us", "v")):
                x, y = series(src, key)
                if x:
                    ax.plot(x, y, style, marker=marker, color=color,
                            label="%s %s" % (label, key[:3]), alpha=1 if key == "fwd_us" else 0.6)
        for key, label, color in (("products_us", "product floor", "grey"),
                                  ("memory_us", "memory floor", "black")):
            x, y = series(base, key)
            if x:
                ax.plot(x, y, ":", color=color, label=label)
        ax.set_yscale("log")
        ax.set_title("%s x %d rows" % (radix, rows))
        log2_axis(ax, [r["log2"] for r in fh + base], "N")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("time per transform, us")
    axes[0][-1].legend(fontsize=8)
    fig.suptitle("NTT: " + run_info(folder))
    fig.tight_layout()
    path = os.path.join(out, "ntt.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# ----------------------------------------------------------------- tables

def tables(folder):
    fh, tr = load(folder, "fhjit_bench.json"), load(folder, "triton.json")
    tk = {(r["graph"], r["radix"], r["log2"]): r for r in kind(tr, "kernel")}
    rows = kind(fh, "kernel")
    if rows:
        print("| graph | radix | elements | fhjit us | of copy | Triton us | fhjit vs Triton |")
        print("|---|---|---|---|---|---|---|")
        for r in sorted(rows, key=lambda r: r["log2"]):
            t = tk.get((r["graph"], r["radix"], r["log2"]))
            print("| %s | %s | 2^%d | %.2f | %.2f | %s | %s |" % (
                r["graph"], r["radix"], r["log2"], r["us"], r["ratio"],
                "%.2f" % t["us"] if t else "-", "%.2fx" % (t["us"] / r["us"]) if t else "-"))
        print()
    ntt = kind(load(folder, "ntt_bench.json"), "ntt")
    base = {(r["radix"], r["log2"], r["rows"]): r for r in kind(load(folder, "ntt_cuda.json"), "ntt")}
    if ntt:
        print("| radix | N | rows | fhjit fwd / inv us | CUDA baseline fwd us | vs baseline "
              "| larger floor us | fwd / floor |")
        print("|---|---|---|---|---|---|---|---|")
        for r in ntt:
            b = base.get((r["radix"], r["log2"], r["rows"]))
            print("| %s | 2^%d | %d | %.2f / %.2f | %s | %s | %s | %s |" % (
                r["radix"], r["log2"], r["rows"], r["fwd_us"], r["inv_us"],
                "%.2f" % b["fwd_us"] if b else "-", "%.2fx" % (b["fwd_us"] / r["fwd_us"]) if b else "-",
                "%.2f" % b["floor_fwd_us"] if b else "-",
                "%.2f" % (r["fwd_us"] / b["floor_fwd_us"]) if b else "-"))
        for r in kind(load(folder, "ntt_bench.json"), "keyswitch"):
            print("\nkey switch %s N=2^%d x %d rows: fused %.2f us, separate %.2f us (%.2fx)" % (
                r["radix"], r["log2"], r["rows"], r["fused_us"], r["separate_us"],
                r["separate_us"] / r["fused_us"] if r["fused_us"] else 0))


def main():
    ap = argparse.ArgumentParser(description="plots of one device run's JSON results")
    ap.add_argument("folder", help="bench/results/<date>-<commit> (or a device script's OUT/results)")
    ap.add_argument("--out", help="where the PNGs go (default: the folder)")
    ap.add_argument("--tables", action="store_true", help="also print RESULTS.md's tables")
    a = ap.parse_args()
    out = a.out or a.folder
    os.makedirs(out, exist_ok=True)
    if a.tables:
        tables(a.folder)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot.py: matplotlib is missing (Debian: apt-get install python3-matplotlib)",
              file=sys.stderr)
        return 1
    made = [p for p in (plot_pointwise(plt, a.folder, out), plot_ntt(plt, a.folder, out)) if p]
    for p in made:
        print("plot.py: wrote %s" % p)
    if not made:
        print("plot.py: no fhjit_bench.json, ntt_bench.json or ntt_cuda.json in %s" % a.folder,
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
