#!/usr/bin/env bash
# Call R: the first look at the persistent grid that fits (an f32 state's first 8 rows copied late into ks; the
# branch at 2f180a5 or later): main against it and against it off, GDN and KDA at B = 128, then the float64 check of
# every K = 128 case on it, then test_cuda_pipeline (its per-head run now takes the persistent grid at B = 72 with
# an f32 or bf16 state, compared bit for bit with the verify pipeline). About 4 minutes. Carry [".gpzA", ".gpzR"],
# where .gpzR/pzR.txz is the branch's package with test_cuda_pipeline added to its folder M;
# PKG=.gpzA/pzA.txz PKGR=.gpzR/pzR.txz bash bench/results/verify-persist-2026-12-05/callR.sh; tar czf $OUT/resR.tgz -C /tmp resR
set -uo pipefail
. bench/call_lib.sh
call_begin /tmp/resR
VA=$(call_unpack /tmp/va "$PKG")
VR=$(call_unpack /tmp/vr "$PKGR")
for v in A R1 R0; do
  case $v in A) V=$VA; sw= ;; R0) V=$VR; sw="--cuda-persist 0" ;; R1) V=$VR; sw="--cuda-persist 1" ;; esac
  for m in qwen3-next kimi-linear; do
    timeout 30 bash -c ". bench/call_lib.sh; V=$V; bench_rows '$v $m' $O/verify.txt --device cuda --model $m \
      --verify 4 --batch 128 --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3 $sw"
    echo "$v $m rc $?" >> $O/log.txt
  done
  el "$v" >> $O/log.txt
done
cat $O/verify.txt
LD_LIBRARY_PATH=$VR timeout 40 "$VR/replayssm" check --device cuda --vectors none --cuda-persist 1 --filter K=128 \
  > $O/check.txt 2>&1
echo "check rc $?" >> $O/log.txt
tail -2 $O/check.txt
LD_LIBRARY_PATH=$VR timeout 150 "$VR/test_cuda_pipeline" > $O/test-pipeline.txt 2>&1
echo "test_cuda_pipeline rc $?" >> $O/log.txt
el "checks" >> $O/log.txt
cat $O/log.txt
