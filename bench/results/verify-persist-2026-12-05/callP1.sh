#!/usr/bin/env bash
# Call P1: the persistent verify grid (decode_k128_persist_kernel) against main's per-head kernel, and its checks.
# Carry [".gpzA", ".gpzP", ".gpzQ"]; PKG=.gpzA/pzA.txz PKGP=.gpzP/pzP.txz PKGQ=.gpzQ/pzQ.txz bash \
#   bench/results/verify-persist-2026-12-05/callP1.sh  (about 5 minutes at most; then tar /tmp/resP1)
set -uo pipefail
. bench/call_lib.sh
call_begin /tmp/resP1
VA=$(call_unpack /tmp/va "$PKG")
VP=$(call_unpack /tmp/vp "$PKGP") # P: the test binary (test_cuda_pipeline), built beside Q's library
VQ=$(call_unpack /tmp/vq "$PKGQ")
timings() { # round r, variants...
  local r=$1 v sw
  shift
  for v in "$@"; do
    case $v in A) V=$VA; sw= ;; Q0) V=$VQ; sw="--cuda-persist 0" ;; Q1) V=$VQ; sw="--cuda-persist 1" ;; esac
    for m in qwen3-next kimi-linear; do
      bench_rows "$v $m r$r" $O/verify.txt --device cuda --model $m --verify 4 --batch 64,128,512 --ring-len 16 \
        --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3 $sw
    done
  done
  el "round $r" | tee -a $O/log.txt
}
timings 1 A Q0 Q1
LD_LIBRARY_PATH=$VQ timeout 120 "$VP/test_cuda_pipeline" > $O/test-pipeline.txt 2>&1
echo "test_cuda_pipeline rc $?" >> $O/log.txt
el "checks" | tee -a $O/log.txt
timings 2 Q1 A
cat $O/log.txt
