#!/usr/bin/env python3
"""Summarise the verify pipeline's per-item marks (verify_pipeline.cu built with RSSM_PIPE_TRACE;
the CSV at RSSM_PIPE_TRACE_FILE's path with ".verify.csv" appended): per phase, the median, mean
and 90th percentile over the items of every CTA, in microseconds.

Producer phases (the producer warps take every item together):
  stage     begun -> the stage's ring copy issued (waiting for the consumers to free the stage)
  prepare   ring copy issued -> the window's tokens prepared
  ring      prepared -> the ring copy seen landed
  compute   ring landed -> handed over (fold tests, gates, ring weights, header)
  total     begun -> handed over
Consumer phases:
  wait      the previous item done -> this item's stage landed
  busy      stage landed -> done (start fold and checkpoint store where it folds, the rows)

usage: verify_trace.py TRACE.csv [...]
"""
import csv
import statistics
import sys


def summarise(path):
    items = {}
    for r in csv.DictReader(open(path)):
        items.setdefault(int(r["cta"]), []).append({k: float(v) for k, v in r.items() if k != "cta"})
    phases = {k: [] for k in ("stage", "prepare", "ring", "compute", "total", "wait", "busy")}
    last = 0.0
    for rows in items.values():
        rows.sort(key=lambda x: x["item"])
        for i, it in enumerate(rows):
            phases["stage"].append(it["ring"] - it["begun"])
            phases["prepare"].append(it["prepared"] - it["ring"])
            phases["ring"].append(it["landed_ring"] - it["prepared"])
            phases["compute"].append(it["handed"] - it["landed_ring"])
            phases["total"].append(it["handed"] - it["begun"])
            if i:
                phases["wait"].append(it["full"] - rows[i - 1]["done"])
            phases["busy"].append(it["done"] - it["full"])
        last = max(last, rows[-1]["done"])
    n = sum(len(r) for r in items.values())
    print(f"{path}: {len(items)} CTAs, {n / max(1, len(items)):.1f} items each, last done at {last:.1f} us")
    for k, v in phases.items():
        if v:
            v = sorted(v)
            print(f"  {k:8s} median {statistics.median(v):6.2f}  mean {statistics.mean(v):6.2f}"
                  f"  p90 {v[int(0.9 * len(v))]:6.2f}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for p in sys.argv[1:]:
        summarise(p)
