#!/usr/bin/env bash
# Call Z5: where a grid lets the next one launch (pdl), on main 37dd406, for the H200.
# 1. The streaming kernel's pdl as main now launches it (no L2 prefetch before the wait; the
#    rules take it up to B = 66 from an H100's call Z4, 1.1-4.0% faster at B = 12-64): is the
#    H200 alike, and what does it do at B = 128 / 512, which the rules leave without? And where
#    should streaming start on the H200 (the per-head kernel at B = 12-32 beside it)?
# 2. The per-head kernel's trigger (call Z2, one H100 round, on the same kernel): --cuda-pdl 2
#    lets the next grid launch after the token's preparation (its first barrier), 3 before the
#    rows' arithmetic and stores, 1 at the wait (what the rules use). Expected from Z2: with an
#    f32 state 2 is 4-6% faster than 1 at B = 12-16 (GDN 20.03 -> 19.12 us at B = 12 on the
#    H100), 3 3% faster at B = 6 than pdl off; 1 stays the fastest at B <= 4 and with a bf16
#    state but at B = 8. If the H200 agrees, the rules choose the trigger by grid size.
# Packed and replay columns alike (the bench prints both). One round per call: the second call
# runs it with CHECKS=0. Carry [".gpz5"] (tar cJf .gpz5/pz5.txz -C DIR M; M: main's library,
# replayssm, test_cuda_stream, test_launch_rules). About 6 minutes a round.
set -uo pipefail
O=/tmp/resZ5; rm -rf "$O"; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" > "$O/info.txt"
rm -rf /tmp/v5 && mkdir -p /tmp/v5 && tar xJf .gpz5/pz5.txz -C /tmp/v5
V=/tmp/v5/M
if [ "${CHECKS:-1}" = 1 ]; then
  {
    LD_LIBRARY_PATH=$V timeout 60 $V/test_launch_rules 2>&1 | tail -1
    LD_LIBRARY_PATH=$V timeout 200 $V/test_cuda_stream 2>&1 | grep -E "^FAIL|passed"
  } > "$O/checks.txt"
  el checks
fi
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --min-time 0.05 --repeat 3 --slot-order random"
bn() { local tag=$1; shift
  LD_LIBRARY_PATH=$V "$V/replayssm" bench $C "$@" |
    awk -v t="$tag" '/staggered/{printf "%-20s %s\n", t, $0; fflush()}' >> "$O/bench.txt"; }
for m in qwen3-next kimi-linear; do
  SB="--model $m --state bf16"
  bn "M/$m/s16/pdl0" $SB --batch 12,16,20,24,28,32,64,128,512 --cuda-stream 16 --cuda-pdl 0
  bn "M/$m/s16/pdl1" $SB --batch 12,16,20,24,28,32,64,128,512 --cuda-stream 16 --cuda-pdl 1
  bn "M/$m/s0/bf16" $SB --batch 12,16,20,24,28,32 --cuda-stream 0
  bn "M/$m/f32/pdl0" --model $m --batch 2,4,6,8,12,16,32,64 --cuda-pdl 0
  for p in 1 2 3; do bn "M/$m/f32/pdl$p" --model $m --batch 2,4,6,8,12,16,32,64 --cuda-pdl $p; done
  for p in 1 2 3; do bn "M/$m/bf16/pdl$p" $SB --batch 4,6,8,12,16,20 --cuda-stream 0 --cuda-pdl $p; done
  bn "M/$m/rules" $SB --batch 1,8,16,24,32,64,128,512
done
el round
