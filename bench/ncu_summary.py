#!/usr/bin/env python3
"""Sums an ncu per-instruction export into the numbers bench/results quotes: warp instructions
per warp, how many come before the first state load (LDG.E.EF, the checkpoint rows), the share
of stall samples at the first CTA barrier, and the most executed opcodes.

    ncu ... --section SourceCounters --import-source yes -o REP replayssm bench ...
    ncu -i REP.ncu-rep --page source --csv --print-source sass > REP.csv
    python3 bench/ncu_summary.py "title" REP.csv ["title" REP.csv ...]
"""
import collections
import csv
import sys


def load(path):
    rows = list(csv.reader(open(path)))
    hdr, data = rows[1], rows[2:]
    ia = hdr.index("Instructions Executed")
    isrc = hdr.index("Source")
    ist = hdr.index("Warp Stall Sampling (All Samples)")
    return [(int(r[ia]) if r[ia].isdigit() else 0, int(r[ist] or 0), r[isrc].strip()) for r in data]


def summary(title, path):
    d = load(path)
    warps = d[0][0]  # the first instruction runs once per warp
    total = sum(x[0] for x in d)
    stalls = sum(x[1] for x in d)
    first = next(i for i, x in enumerate(d) if "LDG.E.EF" in x[2])
    before = sum(x[0] for x in d[:first])
    before_st = sum(x[1] for x in d[:first])
    b1 = next(i for i, x in enumerate(d) if "BAR.SYNC" in x[2] and x[0] > 0)
    at_b1 = sum(x[1] for x in d[b1 - 8 : b1 + 4])  # ncu books the wait near the barrier
    print(
        "%s: %.0f warp instructions per warp; %d before the first state load (%.0f%% of stall samples "
        "there); %.0f%% of stall samples at the first CTA barrier"
        % (title, total / warps, before / warps, 100 * before_st / stalls, 100 * at_b1 / stalls)
    )
    ops = collections.Counter()
    for count, _, src in d:
        t = src.split()
        if t:
            ops[(t[1] if t[0].startswith("@") else t[0]).split(".")[0]] += count
    print("   top opcodes (per warp): " + ", ".join("%s %.0f" % (o, c / warps) for o, c in ops.most_common(12)))


def main(argv):
    if len(argv) < 3 or len(argv) % 2 == 0:
        print(__doc__)
        return 2
    for i in range(1, len(argv), 2):
        summary(argv[i], argv[i + 1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
