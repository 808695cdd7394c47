#!/usr/bin/env python3
"""Summarise the replay pipeline's per-item timeline (src/cuda/pipeline_trace.cuh).

Usage: python3 bench/pipe_trace.py TRACE.csv [...]

The CSV comes from a build with -DRSSM_PIPE_TRACE=ON, run with RSSM_PIPE_TRACE_FILE=TRACE.csv:
one row per CTA entry (item -1) and per traced item (cta,item,issue_us,full_us,done_us and,
from traces that have them, begin_us,hand_us; microseconds from the earliest entry; -1: not
marked). Prints, over the CTAs:
  start   entry, item 0's copy issued, item 0 landed
  items   wait (landed minus the previous item's done) and compute (done minus landed)
  producer  (begin_us, hand_us present) per item: begun to handed over (its token inputs'
          latency and its waits), begun to state copy issued, and landed minus handed over
          (> 0: the copies arrived after the header)
  slow    items whose compute exceeds twice the median (folds, in a staggered batch)
  end     when each CTA's last traced item was done, and the slowest CTAs
"""
import csv
import statistics
import sys


def spread(values):
    if not values:
        return "-"
    return "min %6.2f  median %6.2f  mean %6.2f  max %6.2f" % (
        min(values), statistics.median(values), statistics.mean(values), max(values))


def summarise(path):
    ctas = {}
    hand, issue_after, landed_after = [], [], []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            cta, item = int(row["cta"]), int(row["item"])
            rec = ctas.setdefault(cta, {"entry": None, "items": []})
            if item < 0:
                rec["entry"] = float(row["full_us"])
                continue
            rec["items"].append((item, float(row["issue_us"]), float(row["full_us"]), float(row["done_us"])))
            begin, handed = float(row.get("begin_us") or -1), float(row.get("hand_us") or -1)
            if begin >= 0 and handed >= 0:
                hand.append(handed - begin)
                landed_after.append(float(row["full_us"]) - handed)
                if float(row["issue_us"]) >= 0:
                    issue_after.append(float(row["issue_us"]) - begin)
    entry, issue0, full0, waits, computes, ends = [], [], [], [], [], []
    for rec in ctas.values():
        rec["items"].sort()
        entry.append(rec["entry"] or 0.0)
        if not rec["items"]:
            continue
        issue0.append(rec["items"][0][1])
        full0.append(rec["items"][0][2])
        prev = None
        rec["compute"] = []
        for _, _, full, done in rec["items"]:
            if prev is not None:
                waits.append(full - prev)
            rec["compute"].append(done - full)
            prev = done
        computes += rec["compute"]
        ends.append(prev)
    if not computes:
        print("%s: no items" % path)
        return
    slow_at = 2 * statistics.median(computes)
    print("%s: %d CTAs, %d items traced" % (path, len(ctas), len(computes)))
    print("  entry          ", spread(entry))
    print("  item 0 issued  ", spread(issue0))
    print("  item 0 landed  ", spread(full0))
    print("  wait per item  ", spread(waits))
    print("  compute        ", spread(computes))
    if hand:
        print("  producer: begun to handed over ", spread(hand))
        print("  producer: begun to copy issued ", spread(issue_after))
        print("  landed minus handed over       ", spread(landed_after))
    slow = {c: sum(1 for x in r.get("compute", []) if x > slow_at) for c, r in ctas.items()}
    print("  slow items (compute > %.2f us) per CTA: %s" % (slow_at, spread(list(slow.values()))))
    print("  end            ", spread(ends))
    last = sorted(((r["items"][-1][3], c) for c, r in ctas.items() if r["items"]), reverse=True)[:5]
    print("  slowest CTAs:  " + ", ".join("%d (end %.2f, %d items, %d slow)" % (c, e, len(ctas[c]["items"]), slow[c])
                                          for e, c in last))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for p in sys.argv[1:]:
        summarise(p)
