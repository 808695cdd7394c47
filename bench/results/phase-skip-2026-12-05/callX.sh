#!/usr/bin/env bash
# Call X: where the verify window's and the replay pipeline's time goes in the whole kernel, by leaving
# phases out (README.md). Carry [".gpzA", ".gpzX"]: PKG=.gpzA/pzA.txz (main, bench/gpu_package.sh) and
# PKGX=.gpzX/pzX.txz (main with phase-skip.patch, built with -DRSSM_EXP_SKIP=ON). f32 state, bf16 ring
# and io, random slots, two rounds; first the read and copy floors at B = 64-512 (bench_latency_floor).
# Writes /tmp/resX (info.txt, floor.txt, verify1.txt, verify2.txt, pipe1.txt, pipe2.txt). About 6 minutes.
set -uo pipefail
. bench/call_lib.sh
call_begin /tmp/resX
VA=$(call_unpack /tmp/vxa "${PKG:?PKG=.gpzA/pzA.txz}")
VX=$(call_unpack /tmp/vxx "${PKGX:?PKGX=.gpzX/pzX.txz}")
LD_LIBRARY_PATH=$VA timeout 120 "$VA/bench_latency_floor" 64 128 512 > "$O/floor.txt" 2>&1
el "floors"
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
for r in 1 2; do
  for m in qwen3-next kimi-linear; do
    # verify windows, T = 4 at B = 128 (the per-head kernel)
    V=$VA; unset RSSM_EXP_SKIP
    bench_rows "$m/main" "$O/verify$r.txt" $C --model $m --verify 4 --batch 128
    V=$VX
    for k in 0 1 2 4 6 8 32 33 41; do
      export RSSM_EXP_SKIP=$k
      bench_rows "$m/skip$k" "$O/verify$r.txt" $C --model $m --verify 4 --batch 128
    done
    # replay on the pipeline (forced), B = 64, 128, 512
    V=$VA; unset RSSM_EXP_SKIP
    bench_rows "$m/main" "$O/pipe$r.txt" $C --model $m --batch 64,128,512 --cuda-pipeline 1
    V=$VX
    for k in 0 256; do
      export RSSM_EXP_SKIP=$k
      bench_rows "$m/skip$k" "$O/pipe$r.txt" $C --model $m --batch 64,128,512 --cuda-pipeline 1
    done
  done
  el "round $r"
done
