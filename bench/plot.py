#!/usr/bin/env python3
"""Plots `replayssm bench --csv` files: replay's speed-up over packed decode against the batch
size, one line per (device, model, state, ring, L, phase), with the byte model's ceiling dashed.

    python3 bench/plot.py OUT.png FILE.csv [FILE.csv ...]

Needs matplotlib (pip install matplotlib)."""
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    out, files = argv[1], argv[2:]
    series = defaultdict(list)
    ceiling = defaultdict(list)
    machine = set()
    for f in files:
        with open(f, newline="") as fh:
            for r in csv.DictReader(fh):
                if r["mode"] != "decode":
                    continue
                key = f"{r['device']} {r['model']} {r['state']} state, {r['ring']} ring, L={r['L']}, {r['phase']}"
                series[key].append((int(r["B"]), float(r["speedup"])))
                ceiling[key].append((int(r["B"]), float(r["model_speedup"])))
                machine.add(r["machine"])
    fig, ax = plt.subplots(figsize=(7.5, 4.5), dpi=120)
    for i, key in enumerate(sorted(series)):
        pts = sorted(series[key])
        color = f"C{i}"
        ax.plot([b for b, _ in pts], [s for _, s in pts], "o-", color=color, label=key)
        cpts = sorted(ceiling[key])
        ax.plot([b for b, _ in cpts], [s for _, s in cpts], "--", color=color, alpha=0.4)
    ax.axhline(1.0, color="gray", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch (rows per step)")
    ax.set_ylabel("replay speed-up over packed decode")
    ax.set_title("ReplaySSM decode, cycle average incl. folds (" + ", ".join(sorted(machine)) + ")\n"
                 "dashed: byte-model ceiling", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
