#!/usr/bin/env bash
# Call P2: where the persistent verify grid starts to pay (cuda_persist 0 against 1, one build), and a
# racecheck of a GDN and a KDA quick case on it. Carry [".gpzQ"];
# PKGQ=.gpzQ/pzQ.txz bash bench/results/verify-persist-2026-12-05/callP2.sh
set -uo pipefail
. bench/call_lib.sh
call_begin /tmp/resP2
V=$(call_unpack /tmp/vq "$PKGQ")
for r in 1 2; do
  for p in 0 1; do
    for m in qwen3-next kimi-linear; do
      bench_rows "p$p $m r$r" $O/sweep.txt --device cuda --model $m --verify 4 --batch 4,6,8,9,12,16,24,32,48 \
        --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3 --cuda-persist $p
      bench_rows "p$p $m bf16 r$r" $O/sweep.txt --device cuda --model $m --verify 4 --batch 8,16,32,64,128 \
        --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3 --state bf16 --cuda-persist $p
    done
  done
  el "round $r" | tee -a $O/log.txt
done
for f in "gdn/L=16/state=f32,ring=bf16,io=bf16/H=2,HV=4,K=128" "kda/L=8/state=f32,ring=f32,io=f32/H=2,HV=4,K=128"; do
  m=${f%%/*}
  LD_LIBRARY_PATH=$V timeout 100 compute-sanitizer --tool racecheck $V/replayssm check --device cuda --quick \
    --cuda-persist 1 --cuda-split 1 --filter "$f" > "$O/racecheck-$m.txt" 2>&1
  tail -3 "$O/racecheck-$m.txt" >> $O/log.txt; el "racecheck $m" | tee -a $O/log.txt
done
cat $O/log.txt
