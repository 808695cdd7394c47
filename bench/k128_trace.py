#!/usr/bin/env python3
"""Summarise the per-head replay kernel's per-CTA timeline (src/cuda/k128_trace.cuh).

Usage: python3 bench/k128_trace.py TRACE.k128.csv [...]

The CSV comes from a build with -DRSSM_PIPE_TRACE=ON, run with RSSM_PIPE_TRACE_FILE=TRACE (the
per-head kernel's records go to TRACE.k128.csv): one row per CTA and launch, microseconds from
that launch's earliest CTA entry. Prints, per launch, the CTAs without and with a fold (the end
column: 1 or 2 an end fold, plus 4 after a start fold; bench/results/verify-trace-2026-12-03/phases.py
splits a verify window's phases by it):
  slot     the row's slot known
  ring     the ring landed and the token prepared (the first barrier)
  rows     the ring weights done (the rows start)
  S0 w0/wl the first / last warp's rows of S0 usable (timed at the rows' start, so at least rows)
  end      the last warp's stores issued
and the launch's span (last store) with the phases of the CTA that ended last.
"""
import csv
import statistics
import sys

PHASES = ("slot", "ring", "rows", "s0_first", "s0_last", "end")


def cta_phases(row):
    warps = [k for k in row if k.startswith("rows") and k[4:].isdigit()]
    usable = [float(row[k]) for k in warps if float(row[k]) >= 0]
    stored = [float(row["stored" + k[4:]]) for k in warps if float(row["stored" + k[4:]]) >= 0]
    if not usable or not stored:
        return None
    return {
        "slot": float(row["slot"]),
        "ring": float(row["ring"]),
        "rows": float(row["rows"]),
        "s0_first": min(usable),
        "s0_last": max(usable),
        "end": max(stored),
        "entry": float(row["entry"]),
        "fold": int(row["end"]),
        "smid": int(row["smid"]),
        "cta": int(row["cta"]),
    }


def line(name, ctas):
    if not ctas:
        return "  %-9s  -" % name
    cells = []
    for p in PHASES:
        v = [c[p] for c in ctas]
        cells.append("%6.2f/%6.2f" % (statistics.median(v), max(v)))
    return "  %-9s %4d  " % (name, len(ctas)) + "  ".join(cells)


def summarise(path):
    launches = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            c = cta_phases(row)
            if c is not None:
                launches.setdefault(int(row["launch"]), []).append(c)
    print(f"{path}: {len(launches)} launches")
    print("  (median/max us from the launch's first entry)")
    print("  %-9s %4s  " % ("CTAs", "n") + "  ".join("%-13s" % p for p in PHASES))
    spans = []
    for n in sorted(launches):
        ctas = launches[n]
        last = max(ctas, key=lambda c: c["end"])
        spans.append(last["end"])
        print(f" launch {n}: span {last['end']:.2f} us; last CTA {last['cta']} (SM {last['smid']}, fold {last['fold']}): "
              + ", ".join(f"{p} {last[p]:.2f}" for p in PHASES))
        print(line("no fold", [c for c in ctas if c["fold"] == 0]))
        print(line("fold", [c for c in ctas if c["fold"] != 0]))
    if spans:
        print(f" spans: median {statistics.median(spans):.2f}, mean {statistics.mean(spans):.2f} us")


if __name__ == "__main__":
    for p in sys.argv[1:]:
        summarise(p)
