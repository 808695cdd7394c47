#!/usr/bin/env python3
"""The command line's strictness (tools/options.h): every bad command line exits 2 within a
second with one message naming the option and the value; --version and help work; without a
CUDA device, `check --device cuda` exits 77 (skipped) and the other commands say no CUDA device
was found.

Usage: cli_options.py BUILD/replayssm
"""
import subprocess
import sys
import time

# (arguments, words the message must contain)
BAD = [
    ("simulate --ring f16", ["--ring", "'f16'", "f32, bf16"]),
    ("simulate --batch 10x", ["--batch", "'10x'"]),
    ("simulate --batch 1.5", ["--batch", "'1.5'"]),
    ("simulate --batch -4", ["--batch", "'-4'"]),
    ("simulate --seed abc", ["--seed", "'abc'"]),
    ("simulate --seed -1", ["--seed", "'-1'"]),
    ("simulate --layers 0", ["--layers", "'0'"]),
    ("simulate --layers -3", ["--layers", "'-3'"]),
    ("simulate --layers 99999999999", ["--layers", "'99999999999'"]),
    ("simulate --requests", ["--requests needs a value"]),
    ("simulate --model qwen4", ["--model", "'qwen4'", "demo"]),
    ("simulate --small-batch autox", ["--small-batch", "'autox'", "auto"]),
    ("simulate --gen 5,3", ["--gen", "5,3"]),
    ("simulate --gen 5,,3", ["--gen", "'5,,3'"]),
    ("simulate --spec 20", ["--spec 20", "--ring-len 16"]),
    ("simulate --tp 3", ["--tp 3"]),
    ("simulate --device gpu", ["--device", "'gpu'"]),
    ("simulate --json=1", ["--json takes no value"]),
    ("simulate extra", ["unexpected argument 'extra'"]),
    ("check --vectors", ["--vectors needs a value"]),
    ("check --vectors --quick", ["--vectors needs a value"]),
    ("check --device gpu", ["--device", "'gpu'", "cpu, cuda, reference"]),
    ("check --suite kernels", ["--suite", "'kernels'"]),
    ("check --suite runtime --quick", ["--quick", "--suite runtime"]),
    ("check --qiuck", ["unknown option '--qiuck'"]),
    ("check --cuda-split 3", ["--cuda-split", "'3'", "0, 1, 2, 4"]),
    ("check --cpu-simd", ["--cpu-simd needs a value"]),
    ("check --cuda-prefetch 9", ["--cuda-prefetch", "'9'"]),
    ("handoff --requests 0", ["--requests", "'0'"]),
    ("handoff --ranks 3", ["--ranks", "'3'"]),
    ("handoff --ranks 2", ["--ranks 2", "--device cuda"]),
    ("handoff --pre 20", ["--pre 20", "--ring-len 16"]),
    ("handoff --ring f16", ["--ring", "'f16'"]),
    ("bench --batch 1,x", ["--batch", "'1,x'"]),
    ("bench --verify 8 --ring-len 4", ["--verify 8", "--ring-len 4"]),
    ("bench --min-time 0", ["--min-time", "'0'"]),
    ("bench --min-time nan", ["--min-time", "'nan'"]),
    ("bench --phase sideways", ["--phase", "'sideways'"]),
    ("bench --heads 3 --v-heads 4", ["--heads", "not a valid layer"]),
    ("bench-step --layers 0", ["--layers", "'0'"]),
    ("bench-step --device reference", ["--device", "'reference'"]),
    ("bench-step --small-batch 2", ["--small-batch", "'2'"]),
    ("bench-step --state f16", ["--state", "'f16'", "f32, bf16"]),
    ("frobnicate", ["unknown command 'frobnicate'"]),
    ("help frobnicate", ["unknown command 'frobnicate'"]),
]


def run(exe, args, timeout=60):
    t0 = time.monotonic()
    p = subprocess.run([exe] + args.split(), capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr, time.monotonic() - t0


def main(exe):
    failed = 0

    def case(ok, what):
        nonlocal failed
        print("%s %s" % ("ok  " if ok else "FAIL", what))
        failed += not ok

    for args, words in BAD:
        rc, out, err, dt = run(exe, args)
        ok = rc == 2 and dt < 1.0 and all(w in err for w in words) and err.count("\n") == 1
        case(ok, "`replayssm %s` -> exit %d in %.2f s: %s" % (args, rc, dt, err.strip() or out.strip()[:200]))

    rc, out, err, _ = run(exe, "--version")
    case(rc == 0 and out.startswith("replayssm "), "--version: %s" % out.strip())
    cuda = "(cuda: available)" in out
    for args in ("help", "--help", "help check", "check --help", "simulate -h", "bench --help", "bench-step --help",
                 "handoff --help"):
        rc, out, err, _ = run(exe, args)
        case(rc == 0 and "usage" in out and not err, "`replayssm %s` prints its usage" % args)
    rc, out, err, _ = run(exe, "")
    case(rc == 2 and "usage" in err, "no command: usage on stderr, exit 2")

    rc, out, err, _ = run(exe, "check --device reference --quick --vectors none --filter matrix/gdn/L=1/")
    case(rc == 0 and "golden vectors: none (--vectors none)" in out, "check --vectors none says so")
    rc, out, err, _ = run(exe, "check --device reference --quick --filter matrix/gdn/L=1/")
    case(rc == 0 and "golden vectors: " in out, "check says which golden vectors it runs: %s" %
         next((l for l in out.splitlines() if l.startswith("golden vectors")), "(no line)"))
    rc, out, err, _ = run(exe, "check --device reference --quick --filter no-such-case")
    case(rc == 2 and "--filter 'no-such-case' matches no case" in err, "a filter matching nothing exits 2")

    if not cuda:
        for args in ("check --device cuda --quick", "check --suite runtime --device cuda"):
            rc, out, err, _ = run(exe, args)
            case(rc == 77 and "no CUDA device was found" in out, "`replayssm %s` without CUDA: exit 77 (skipped)" % args)
        for args in ("simulate --device cuda", "simulate --device cuda --tp 2", "handoff --device cuda",
                     "bench --device cuda", "bench-step --device cuda"):
            rc, out, err, _ = run(exe, args)
            case(rc == 1 and "no CUDA device was found" in err,
                 "`replayssm %s` without CUDA: %s" % (args, err.strip()))
    print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
