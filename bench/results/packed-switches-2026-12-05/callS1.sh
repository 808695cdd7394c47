#!/usr/bin/env bash
# Call S1 (prepared for an H200): packed decode's launch switches on the per-head kernel, f32
# state, against the rules. The pdl triggers of 8a68725 (after the token's preparation at B =
# 9-49, before the rows' arithmetic at B = 5-8) were timed on an H100 only; on the H200 they took
# GDN B = 16 from 20.82 to 20.14 us and left B = 32 at 37.85, 5.8% behind FLA's contiguous call
# (35.78; ../peers-2026-12-05/ call P9h200), 2.7-3.3% from 64. Do other triggers, splits or
# prefetch distances close that on the H200? GDN (every switch) and KDA (pdl), B = 12-128,
# random slots, two rounds.
# Carry [".gpzN"] (PKG=.gpzN/pzN.txz, folder M). Writes /tmp/resS1. About 5 minutes.
set -uo pipefail
. bench/call_lib.sh
call_begin /tmp/resS1
V=$(call_unpack /tmp/vs "${PKG:?PKG=.gpzN/pzN.txz}") || exit 1
C="--device cuda --state f32 --ring-len 16 --ring bf16 --io bf16 --min-time 0.05 --repeat 3 --slot-order random"
bn() { local tag=$1 m=$2; shift 2; bench_rows "$tag" "$O/bench$r.txt" $C --model $m --batch 12,16,24,32,48,64,128 "$@"; }
for r in 1 2; do
  for m in qwen3-next kimi-linear; do
    bn "$m/rule" $m
    for p in 0 1 2 3; do bn "$m/pdl$p" $m --cuda-pdl $p; done
    [ $m = qwen3-next ] || continue
    bn "$m/split1" $m --cuda-split 1
    bn "$m/split4" $m --cuda-split 4
    bn "$m/prefetch0" $m --cuda-prefetch 0
    bn "$m/prefetch2" $m --cuda-prefetch 2
  done
  el "round $r"
done
