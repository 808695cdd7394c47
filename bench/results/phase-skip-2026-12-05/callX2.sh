#!/usr/bin/env bash
# Call X2: call X's verify window with every phase but the loads (and the fold tests) left out
# (bits 47), and with the start fold and the rows left out (bits 14), against the same build at 0;
# and the pipeline's arithmetic at GDN B = 16 and 32, where its start weighs more. Carry
# [".gpzX"] (PKGX=.gpzX/pzX.txz). Writes /tmp/resX2 (info.txt, verify1.txt, verify2.txt,
# pipe1.txt, pipe2.txt). About 2 minutes.
set -uo pipefail
. bench/call_lib.sh
call_begin /tmp/resX2
V=$(call_unpack /tmp/vxx "${PKGX:?PKGX=.gpzX/pzX.txz}")
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
for r in 1 2; do
  for m in qwen3-next kimi-linear; do
    for k in 0 14 47; do
      export RSSM_EXP_SKIP=$k
      bench_rows "$m/skip$k" "$O/verify$r.txt" $C --model $m --verify 4 --batch 128
    done
  done
  for k in 0 256; do
    export RSSM_EXP_SKIP=$k
    bench_rows "qwen3-next/skip$k" "$O/pipe$r.txt" $C --model qwen3-next --batch 16,32 --cuda-pipeline 1
  done
  el "round $r"
done
