#!/usr/bin/env python3
"""Tables an A/B call's `replayssm bench` lines: one row per variant, one column per batch, each cell
the mean over the call's rounds, the fastest of a column in bold; a line after the table gives the
largest spread between rounds, so that a difference smaller than it reads as a tie.

The device calls (bench/results/*/call*.sh) tag each bench line with its variant:

    W/qwen3-next/rw16/pdl0     24  16 staggered |      18.91      19.56  0.967x | ...
    L3/qwen3-next/T4          128  16  4 staggered 3.49 |     545.96     159.76  3.417x | ...

    python3 bench/ab_table.py bench.txt [--time packed|replay] [--match REGEX] [--batches 16,32]

A tag names one configuration, the model included: the lines under one tag and batch are its rounds.
--match keeps the variants whose tag it finds (a regular expression, re.search), --batches the
columns named; the output is Markdown, as the results pages quote it.
"""
import argparse
import re
import sys

# tag, then the bench line: batch, ring length, (verify: tokens) row phases, (verify: tokens
# accepted), then "| packed replay ratio |"
LINE = re.compile(r"^(\S+)\s+(\d+)\s+\d+\s+(?:\d+\s+)?[a-z]\S*(?:\s+[0-9.]+)?\s+\|\s+([0-9.]+)\s+([0-9.]+)\s+[0-9.]+x\s+\|")


def parse(lines, time="packed"):
    """{tag: {batch: [µs per round]}}, tags and batches in the order they first appear."""
    col = {"packed": 3, "replay": 4}[time]
    runs = {}
    for line in lines:
        m = LINE.match(line)
        if m:
            runs.setdefault(m.group(1), {}).setdefault(int(m.group(2)), []).append(float(m.group(col)))
    return runs


def table(runs, batches=None):
    """The Markdown table and the spread line, as a list of lines."""
    if batches is None:
        batches = []
        for cells in runs.values():
            batches += [b for b in cells if b not in batches]
        batches.sort()
    mean = {t: {b: sum(v) / len(v) for b, v in cells.items()} for t, cells in runs.items()}
    best = {b: min((m[b] for m in mean.values() if b in m), default=None) for b in batches}
    out = ["| variant | " + " | ".join("B = %d" % b for b in batches) + " |", "|---" * (len(batches) + 1) + "|"]
    for t, m in mean.items():
        cells = []
        for b in batches:
            if b not in m:
                cells.append("")
            else:
                s = "%.2f" % m[b]
                cells.append("**%s**" % s if m[b] == best[b] else s)
        out.append("| %s | %s |" % (t, " | ".join(cells)))
    spreads = [(max(v) - min(v), t, b) for t, cells in runs.items() for b, v in cells.items() if len(v) > 1]
    if spreads:
        s, t, b = max(spreads)
        rounds = max(len(v) for cells in runs.values() for v in cells.values())
        out.append("")
        out.append(
            "Means of up to %d rounds; the largest spread between rounds %.2f µs (%s, B = %d)." % (rounds, s, t, b)
        )
    else:
        out.append("")
        out.append("One round.")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+")
    ap.add_argument("--time", choices=["packed", "replay"], default="packed")
    ap.add_argument("--match", default="")
    ap.add_argument("--batches", default="")
    a = ap.parse_args(argv)
    lines = []
    for f in a.files:
        with open(f) as fh:
            lines += fh.readlines()
    runs = {t: c for t, c in parse(lines, a.time).items() if re.search(a.match, t)}
    if not runs:
        print("ab_table: no tagged bench lines%s" % (" match " + a.match if a.match else ""), file=sys.stderr)
        return 1
    batches = [int(b) for b in a.batches.split(",")] if a.batches else None
    print("\n".join(table(runs, batches)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
