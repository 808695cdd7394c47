#!/usr/bin/env bash
# Call P0: the smallest first look (about 2.5 minutes): main against the persistent grid, GDN and KDA at B = 128 and
# 512, then test_cuda_pipeline on the branch. Carry [".gpzA", ".gpzP", ".gpzQ"];
# PKG=.gpzA/pzA.txz PKGP=.gpzP/pzP.txz PKGQ=.gpzQ/pzQ.txz bash bench/results/verify-persist-2026-12-05/callP0.sh
set -uo pipefail
. bench/call_lib.sh
call_begin /tmp/resP0
VA=$(call_unpack /tmp/va "$PKG")
VP=$(call_unpack /tmp/vp "$PKGP")
VQ=$(call_unpack /tmp/vq "$PKGQ")
for v in A Q1; do
  case $v in A) V=$VA; sw= ;; Q1) V=$VQ; sw="--cuda-persist 1" ;; esac
  for m in qwen3-next kimi-linear; do
    bench_rows "$v $m" $O/verify.txt --device cuda --model $m --verify 4 --batch 128,512 --ring-len 16 \
      --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3 $sw
  done
  el "$v" | tee -a $O/log.txt
done
LD_LIBRARY_PATH=$VQ timeout 90 "$VP/test_cuda_pipeline" > $O/test-pipeline.txt 2>&1
echo "test_cuda_pipeline rc $?" >> $O/log.txt
cat $O/log.txt
