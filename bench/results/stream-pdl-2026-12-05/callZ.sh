#!/usr/bin/env bash
# Call Z: the streaming kernel, the programmatic launch (pdl), and 32 rows per warp.
# 1. Call X (stream-unroll-2026-12-05/) found the streaming kernel 2-5% slower with pdl than
#    without at GDN and KDA B = 12-28, bf16 state (GDN B = 28 21.78 against 20.86 us), where the
#    per-head kernel gains 10-20% from it; main now never launches it so (rssm_stream_pdl). In
#    its pdl path a streaming CTA prefetches its 16 KiB of rows to L2, waits, then lets the next
#    kernel launch. What should move: if the next grid's early CTAs are the cost, the trigger
#    later (Q: after chunk 0; T: before the last chunk's stores; R: at exit) or no prefetch (P)
#    take the loss away and keep the
#    launch overlap: up to the per-head kernel's 10% (GDN B = 16 13.39 -> about 12.2 us,
#    FlashInfer 12.18).
# 2. 32 rows per warp (W, branch wip/stream-rw32): a head per CTA of 4 warps, half the warps of
#    16 rows. GDN B = 32 then fits one wave (4,096 warps, 4,224 resident at 32 a SM) where 16 rows
#    take 1.94 waves; B = 16 one wave either way. What should move: B = 24-64 by the second
#    wave's tail, up to 5% (GDN B = 32 22.99 -> about 22, FlashInfer 21.91), if 15-31 warps a SM
#    with their rows two chunks ahead (W2: early at every B) keep DRAM busy; without early
#    loads (W below B = 99) one chunk ahead may be too few rows in flight.
# 3. Where streaming starts: GDN and KDA B = 12-20 without pdl against the per-head kernel (the
#    rules stream from B = 24 / 31; call X had the streaming kernel faster at B = 16 only).
# W = wip/stream-rw32 (main and the 32-row case), W2 = W with rssm_stream_early returning 1,
# P / Q / T / R = W with the pdl paths of stream_k128.cu and decode_k128.cu (the per-head kernel, for
# call Z2: trigger after the token's preparation) changed as said in 1. Libraries for sm_90, no PTX.
# Carry [".gpz"]: tar cJf .gpz/pz.txz -C DIR W W2 P Q R T F F2 (W: libreplayssm.so*, replayssm,
# test_cuda_stream, test_launch_rules; the others libreplayssm.so*).
set -uo pipefail
O=/tmp/resZ; rm -rf "$O"; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" > "$O/info.txt"
rm -rf /tmp/v && mkdir -p /tmp/v && tar xJf .gpz/pz.txz -C /tmp/v
V=/tmp/v/W
{
  LD_LIBRARY_PATH=$V timeout 60 $V/test_launch_rules 2>&1 | tail -1
  LD_LIBRARY_PATH=$V timeout 200 $V/test_cuda_stream 2>&1 | grep -E "^FAIL|passed" | sed "s/^/W: /"
  LD_LIBRARY_PATH=$V timeout 150 $V/replayssm check --device cuda --quick 2>&1 | tail -2
} > "$O/checks.txt"; el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --min-time 0.05 --repeat 3 --slot-order random --state bf16"
bn() { local lib=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/v/$lib "$V/replayssm" bench $C "$@" |
    awk -v t="$tag" '/staggered/{printf "%-22s %s\n", t, $0; fflush()}' >> "$O/bench.txt"; }
SB=12,14,16,18,20,24,28,32,64
for r in 1 2; do
  for m in qwen3-next kimi-linear; do
    bn W "W/$m/rw16/pdl0" --model $m --batch $SB --cuda-stream 16 --cuda-pdl 0
    for l in W P Q T R; do bn $l "$l/$m/rw16/pdl1" --model $m --batch $SB --cuda-stream 16 --cuda-pdl 1; done
    bn W "W/$m/rw32/pdl0" --model $m --batch $SB,96,128,192,512 --cuda-stream 32 --cuda-pdl 0
    bn W2 "W2/$m/rw32/pdl0" --model $m --batch $SB --cuda-stream 32 --cuda-pdl 0
    bn W "W/$m/rw0/rules" --model $m --batch $SB --cuda-stream 0
    bn W "W/$m/rules" --model $m --batch 1,2,4,8,16,24,32,64,128,512
  done
  el "round $r"
  [ $(( $(date +%s) - T0 )) -gt 300 ] && { el "no second round: the call's 600 s"; break; }
done
