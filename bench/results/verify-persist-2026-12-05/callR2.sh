#!/usr/bin/env bash
# Call R2 (after call R showed the grid running): main (A) against the branch with the persistent grid off (R0)
# and on (R1) at B = 64, 128 and 512, GDN and KDA, two rounds in turned order; then where it starts to pay
# (R0 against R1 at B = 4-64, f32 and bf16 states, one round); then a racecheck of a GDN and a KDA quick case
# with the grid forced. callP1.sh and callP2.sh in one call, less what call R ran. About 6 minutes. Carry
# [".gpzA", ".gpzR"]; PKG=.gpzA/pzA.txz PKGR=.gpzR/pzR.txz bash bench/results/verify-persist-2026-12-05/callR2.sh;
# tar czf $OUT/resR2.tgz -C /tmp resR2
set -uo pipefail
. bench/call_lib.sh
call_begin /tmp/resR2
VA=$(call_unpack /tmp/va "$PKG")
VR=$(call_unpack /tmp/vr "$PKGR")
timings() { # round, variants...
  local r=$1 v sw
  shift
  for v in "$@"; do
    case $v in A) V=$VA; sw= ;; R0) V=$VR; sw="--cuda-persist 0" ;; R1) V=$VR; sw="--cuda-persist 1" ;; esac
    for m in qwen3-next kimi-linear; do
      bench_rows "$v $m r$r" $O/verify.txt --device cuda --model $m --verify 4 --batch 64,128,512 --ring-len 16 \
        --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3 $sw
    done
  done
  el "round $r" >> $O/log.txt
}
timings 1 A R0 R1
timings 2 R1 R0 A
V=$VR
for p in 0 1; do
  for m in qwen3-next kimi-linear; do
    bench_rows "p$p $m" $O/sweep.txt --device cuda --model $m --verify 4 --batch 4,8,12,16,24,32,48,64 \
      --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3 --cuda-persist $p
    bench_rows "p$p $m bf16" $O/sweep.txt --device cuda --model $m --verify 4 --batch 8,16,32,64,128 \
      --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3 --state bf16 --cuda-persist $p
  done
done
el "sweep" >> $O/log.txt
for f in "gdn/L=16/state=f32,ring=bf16,io=bf16/H=2,HV=4,K=128" "kda/L=8/state=f32,ring=f32,io=f32/H=2,HV=4,K=128"; do
  m=${f%%/*}
  LD_LIBRARY_PATH=$V timeout 100 compute-sanitizer --tool racecheck $V/replayssm check --device cuda --quick \
    --cuda-persist 1 --filter "$f" > "$O/racecheck-$m.txt" 2>&1
  echo "racecheck $m rc $?" >> $O/log.txt
  tail -3 "$O/racecheck-$m.txt" >> $O/log.txt
  el "racecheck $m" >> $O/log.txt
done
cat $O/verify.txt $O/log.txt
