#!/usr/bin/env bash
# Call VS: where a verify window's time goes in the whole kernel, by leaving phases out (README.md).
# Carry [".gpzA", ".gpzX"]: PKG=.gpzA/pzA.txz (main, bench/gpu_package.sh) and PKGX=.gpzX/pzX.txz (the
# branch wip/verify-skip built with -DRSSM_EXP_VERIFY_SKIP=ON: bench/gpu_package.sh .gpzX/pzX.txz
# BUILD_DIR, that build folder configured with the option). T = 4 at B = 128, GDN and KDA, f32 state,
# two rounds. Writes /tmp/resVS (info.txt, bench1.txt, bench2.txt). About 4 minutes.
set -uo pipefail
. bench/call_lib.sh
call_begin /tmp/resVS
VA=$(call_unpack /tmp/vsa "${PKG:?PKG=.gpzA/pzA.txz}")
VX=$(call_unpack /tmp/vsx "${PKGX:?PKGX=.gpzX/pzX.txz}")
C="--device cuda --verify 4 --batch 128 --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
for r in 1 2; do
  for m in qwen3-next kimi-linear; do
    V=$VA
    unset RSSM_EXP_VERIFY_SKIP
    bench_rows "$m/main" "$O/bench$r.txt" $C --model $m
    V=$VX
    for k in 0 1 2 4 6 8 32 33 41; do
      export RSSM_EXP_VERIFY_SKIP=$k
      bench_rows "$m/skip$k" "$O/bench$r.txt" $C --model $m
    done
  done
  el "round $r"
done
