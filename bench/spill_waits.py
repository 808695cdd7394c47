#!/usr/bin/env python3
r"""Spill stores that wait for DRAM, kernel by kernel, from a cubin's SASS.

A register spilled right after a global load is stored to local memory with STL, and that store
cannot issue before the load has returned: the warp stalls for a DRAM round trip where the source
expected the load to stay in flight. ptxas -v counts spill bytes, not this; the count here is
what made GDN verify (T = 3-4) 9% slower at 4bf317d (bench/results/verify-spill-2026-12-02/).

    nvcc ... -cubin -o k.cubin src/cuda/decode_k128.cu     (the build's flags, -arch sm_90)
    python3 bench/spill_waits.py k.cubin [--match REGEX] [--max-waits N]
    python3 bench/spill_waits.py build/libreplayssm.so --match 'decode_k128_kernel<\w+, \w+, 2, 4,' --max-waits 0

Needs cuobjdump (CUDA toolkit, or triton's copy) on PATH, or --cuobjdump, for a cubin, object or
library; a saved `cuobjdump -sass` listing (a .sass or .txt file) is read as it is. With
--max-waits it exits 1 when a matched kernel has more such stores (the ctest spill_waits_windows). Per kernel: STL and LDL counts and the STLs whose source register was last
written by a global load (LDG). It reads one instruction at a time in listing order, so a load and
a store in different branches can be paired (an over-count, never an under-count).

Late row loads: the kernels read the checkpoint's rows with streaming loads (__ldcs, ld.global.cs:
LDG ... .EF), all meant to be in flight together. Their round begins at the last wait for a global
load before the first of them (the slot's, say); the column counts the row loads issued after the
warp first waits for a load of that round (one of the rows, the cursor, ...): any instruction naming
a register such a load may still be filling (its data, or the register reused). Those go out a DRAM
round trip late. With --max-late-loads it exits 1 when a matched kernel has more. One verify window
read each 16-byte group whole and kept half: 64 registers landing, and ptxas issued 7 of its 16
row loads after the first had arrived; another spilled the cursor between its row loads.

Rows in flight: the row loads issued before the first instruction that names a register a row load
may still be filling (its data, or the register reused): how many rows a warp has asked for when
it first needs one. The source's order does not decide it: ptxas moved the streaming kernel's next
chunk (4 rows) after the current chunk's unpack, into the same registers, so its warps had 4.
With --min-rows-in-flight it exits 1 when a matched kernel has fewer.

Rows ahead: at each row's first use while some of the kernel's row loads are still to be issued,
the row loads issued and not yet used (the row itself included); the column is the fewest. A
streaming warp that loads one chunk ahead has 1 (the last row of a chunk, its next chunk not yet
asked for); two chunks ahead, 5. "-" where every row is asked for before the first is used. With
--min-rows-ahead it exits 1 when a matched kernel has fewer.
"""
import argparse
import re
import subprocess
import sys

INSN = re.compile(r"^\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)\s*([^;]*);")
# opcodes whose first register operand is not a destination
NO_DEST = ("ST", "RED", "ATOM", "BRA", "BAR", "BSYNC", "BSSY", "EXIT", "RET", "CALL", "WARPSYNC", "LDGSTS")


def demangle(name):
    out = subprocess.run(["c++filt", name], capture_output=True, text=True).stdout.strip()
    return out or name


def width(op):
    """Registers an instruction writes from its first destination register on."""
    if ".128" in op:
        return 4
    if ".64" in op or op.startswith("DMMA"):
        return 2
    return 1


def is_row_load(op):
    """A streaming load of the checkpoint's rows (__ldcs: LDG ... .EF)."""
    return op.startswith("LDG") and ".EF" in op


def scan(body):
    """STL and LDL counts, spill stores waiting for a global load, late row loads."""
    writer = {}  # register number -> opcode that last wrote it
    pending = {}  # register number -> index of the global load that may still be filling it
    loads = 0  # global loads so far
    last_wait = 0  # before the first row load: loads issued before the latest wait for one
    round0 = None  # from the first row load on: last_wait then, where the rows' round began
    waited = False
    stl = ldl = waits = late = 0
    row_regs = set()  # registers a row load may still be filling
    row_of = {}  # register -> index of the row load that last wrote it
    rows = 0  # row loads so far
    in_flight = None  # row loads issued before the first instruction that names such a register
    unused = set()  # row loads (by index) issued and not yet named
    ahead = None  # fewest of those at a row's first use while rows remain to be issued
    insns = [m.groups() for m in map(INSN.match, body.splitlines()) if m]
    total_rows = sum(is_row_load(op) for op, _ in insns)
    for op, args in insns:
        regs = re.findall(r"\bR(\d+)(\.64)?\b", args)
        named = {int(r) + i for r, pair in regs for i in range(2 if pair else 1)}
        if in_flight is None and named & row_regs:
            in_flight = rows
        first = {row_of.pop(r) for r in named if r in row_of} & unused
        if first and rows < total_rows:
            ahead = len(unused) if ahead is None else min(ahead, len(unused))
        unused -= first
        hit = [pending.pop(r) for r in named if r in pending]
        if round0 is None and hit:
            last_wait = loads
        elif any(i >= round0 for i in hit):  # a load of the rows' round: it has not arrived
            waited = True
        row_load = is_row_load(op)
        if row_load:
            if round0 is None:
                round0 = last_wait
            late += waited
            rows += 1
            unused.add(rows - 1)
        if op.startswith("STL"):
            stl += 1
            src = re.search(r"\],\s*R(\d+)", args)
            if src and writer.get(int(src.group(1)), "").startswith("LDG"):
                waits += 1
            continue
        if op.startswith("LDL"):
            ldl += 1
        if op.startswith(NO_DEST):
            continue
        dst = re.search(r"\bR(\d+)\b", args)
        if dst:
            first = int(dst.group(1))
            for r in range(first, first + width(op)):
                writer[r] = op
                if op.startswith("LDG"):
                    pending[r] = loads
                if row_load:
                    row_regs.add(r)
                    row_of[r] = rows - 1
            loads += op.startswith("LDG")
    return stl, ldl, waits, late, rows if in_flight is None else in_flight, ahead


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("input", help="a cubin, object or shared library, or the text of cuobjdump -sass (.sass, .txt)")
    ap.add_argument("--match", default="", help="only kernels whose demangled name this regular expression finds")
    ap.add_argument("--max-waits", type=int, default=None, help="exit 1 when a matched kernel has more")
    ap.add_argument("--max-late-loads", type=int, default=None, help="exit 1 when a matched kernel has more")
    ap.add_argument("--min-rows-in-flight", type=int, default=None, help="exit 1 when a matched kernel has fewer")
    ap.add_argument("--min-rows-ahead", type=int, default=None, help="exit 1 when a matched kernel has fewer")
    ap.add_argument("--cuobjdump", default="cuobjdump", help="the cuobjdump to run (default: the one on PATH)")
    a = ap.parse_args(argv)
    if a.input.endswith((".sass", ".txt")):
        with open(a.input) as f:
            text = f.read()
    else:
        try:
            r = subprocess.run([a.cuobjdump, "-sass", a.input], capture_output=True, text=True)
        except OSError as e:
            sys.exit(f"cannot run {a.cuobjdump}: {e}")
        if r.returncode != 0:
            sys.exit(f"cuobjdump failed: {r.stderr.strip()}")
        text = r.stdout
    rows = []
    for part in re.split(r"\n\s+Function : ", text)[1:]:
        name, _, body = part.partition("\n")
        name = demangle(name.strip())
        if re.search(a.match, name):
            rows.append((name, *scan(body)))
    if not rows:
        sys.exit("no kernel matched")
    w = max(len(r[0]) for r in rows)
    print(f"{'kernel':{w}}  STL  LDL  STL waiting for LDG  late row loads  rows in flight  rows ahead")
    for name, stl, ldl, waits, late, flight, ahead in sorted(rows):
        shown = "-" if ahead is None else str(ahead)
        print(f"{name:{w}}  {stl:3d}  {ldl:3d}  {waits:19d}  {late:14d}  {flight:14d}  {shown:>10}")
    bad = False
    over = [r[0] for r in rows if a.max_waits is not None and r[3] > a.max_waits]
    if over:
        print(f"{len(over)} kernel(s) with more than {a.max_waits} spill store(s) waiting for a global load")
        bad = True
    late = [r[0] for r in rows if a.max_late_loads is not None and r[4] > a.max_late_loads]
    if late:
        print(f"{len(late)} kernel(s) with more than {a.max_late_loads} row load(s) issued after a wait for one")
        bad = True
    few = [r[0] for r in rows if a.min_rows_in_flight is not None and r[5] < a.min_rows_in_flight]
    if few:
        print(f"{len(few)} kernel(s) with fewer than {a.min_rows_in_flight} row load(s) issued before a row is used")
        bad = True
    behind = [r[0] for r in rows if a.min_rows_ahead is not None and r[6] is not None and r[6] < a.min_rows_ahead]
    if behind:
        print(f"{len(behind)} kernel(s) with fewer than {a.min_rows_ahead} unused row load(s) when a row is first used")
        bad = True
    if bad:
        sys.exit(1)
    print(f"{len(rows)} kernel(s) checked")


if __name__ == "__main__":
    main()
