#!/usr/bin/env python3
"""The library's boundary, checked (run by ctest):

  boundary.py exports LIBRARY   the shared library exports exactly the functions that
                                include/*.h declare with RSSM_API
  boundary.py includes          no file outside src/ includes a src/ header, except the pairs
                                tests/internal_headers.txt declares; no src/ file includes a
                                header from outside src/ and include/

Prints what differs and exits 1; exits 0 when the boundary holds.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE_EXT = (".c", ".h", ".cu", ".cuh")


def declared_functions():
    names = set()
    for h in sorted(os.listdir(os.path.join(ROOT, "include"))):
        if not h.endswith(".h"):
            continue
        text = open(os.path.join(ROOT, "include", h)).read()
        # RSSM_API <return type> name(   (the type may span words and pointers)
        for m in re.finditer(r"^RSSM_API\s+[^;{]*?\b(\w+)\s*\(", text, re.M):
            names.add(m.group(1))
    return names


def exported_functions(library):
    out = subprocess.run(["nm", "-D", "--defined-only", library], check=True, capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TtWiDdBbRrVv":
            names.add(parts[2].split("@")[0])
    return names - {"_init", "_fini"}


def check_exports(library):
    declared, exported = declared_functions(), exported_functions(library)
    bad = 0
    for name in sorted(exported - declared):
        print(f"exported but not declared with RSSM_API in include/: {name}")
        bad += 1
    for name in sorted(declared - exported):
        print(f"declared with RSSM_API but not exported: {name}")
        bad += 1
    print(f"{len(exported)} exported, {len(declared)} declared: {'match' if not bad else 'MISMATCH'}")
    return 1 if bad else 0


def tracked_sources():
    out = subprocess.run(["git", "-C", ROOT, "ls-files"], capture_output=True, text=True)
    if out.returncode == 0 and out.stdout:
        files = out.stdout.split()
    else:  # not a git checkout (an unpacked source tree): every file under the root
        files = [os.path.relpath(os.path.join(d, f), ROOT) for d, _, fs in os.walk(ROOT) for f in fs]
    return [f for f in files if f.endswith(SOURCE_EXT) and os.path.exists(os.path.join(ROOT, f))]


def declared_internal():
    pairs = set()
    with open(os.path.join(ROOT, "tests", "internal_headers.txt")) as f:
        for line in f:
            line = line.split("#", 1)[0].split()
            if len(line) == 2:
                pairs.add((line[0], line[1]))
    return pairs


def check_includes():
    allowed, used, bad = declared_internal(), set(), 0
    for f in tracked_sources():
        here = os.path.dirname(f)
        in_src = f.startswith("src/")
        for n, line in enumerate(open(os.path.join(ROOT, f), errors="replace"), 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m:
                continue
            inc = m.group(1)
            beside = os.path.exists(os.path.join(ROOT, here, inc))
            from_src = os.path.exists(os.path.join(ROOT, "src", inc)) and not beside
            if in_src:
                ok = beside or from_src or os.path.exists(os.path.join(ROOT, "include", inc)) or inc == "replayssm_version.h"
                if not ok:
                    print(f"{f}:{n}: a library file includes {inc}, which is neither in src/ nor in include/")
                    bad += 1
            elif from_src:
                if (f, inc) in allowed:
                    used.add((f, inc))
                else:
                    print(f"{f}:{n}: includes src/{inc} (outside src/ only include/ headers, or a pair declared "
                          f"in tests/internal_headers.txt)")
                    bad += 1
    for f, inc in sorted(allowed - used):
        print(f"tests/internal_headers.txt declares {f} -> {inc}, which is not included: remove the line")
        bad += 1
    print(f"includes: {'the boundary holds' if not bad else f'{bad} crossing(s)'}")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "exports":
        sys.exit(check_exports(sys.argv[2]))
    if len(sys.argv) == 2 and sys.argv[1] == "includes":
        sys.exit(check_includes())
    print(__doc__)
    sys.exit(2)
