#!/usr/bin/env bash
# Call Z: the streaming kernel and the programmatic launch (pdl). Call X (stream-unroll-2026-12-05/)
# found the streaming kernel 0.4-4.9% slower with pdl than without at GDN B = 12-28 with a bf16
# state (B = 28 21.79 against 20.86 us; KDA 2.5-5%), where the per-head kernel gains 10-20% from
# it. In its pdl path a streaming CTA prefetches its rows to L2 before the wait and lets the next
# kernel launch right after it. What should move: if the next grid's early CTAs (their prefetch
# racing this grid's rows, or their slots) are the cost, the trigger later (Q: after chunk 0;
# R: at exit) or no prefetch (P) take pdl's loss away and keep its launch overlap, up to the
# per-head kernel's gain (GDN B = 16 13.39 -> 12.5 us or so, FlashInfer 12.18).
# M = main 468a4eb + the early rule from B = 99 (the merge of wip/stream-ahead2); P, Q, R = M's
# stream_k128.cu changed as said. Carry [".gpz"]: tar cJf .gpz/pz.txz -C /tmp/pz M P Q R.
set -uo pipefail
O=/tmp/resZ; rm -rf "$O"; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" > "$O/info.txt"
rm -rf /tmp/v && mkdir -p /tmp/v && tar xJf .gpz/pz.txz -C /tmp/v
V=/tmp/v/M
{
  LD_LIBRARY_PATH=$V timeout 60 $V/test_launch_rules 2>&1 | tail -1
  for l in M Q R; do
    LD_LIBRARY_PATH=/tmp/v/$l timeout 150 $V/test_cuda_stream 2>&1 | grep -E "^FAIL|passed" | sed "s/^/$l: /"
  done
  LD_LIBRARY_PATH=$V timeout 150 $V/replayssm check --device cuda --quick 2>&1 | tail -2
} > "$O/checks.txt"; el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --min-time 0.05 --repeat 3 --slot-order random --state bf16"
bn() { local lib=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/v/$lib "$V/replayssm" bench $C "$@" |
    awk -v t="$tag" '/staggered/{printf "%-22s %s\n", t, $0; fflush()}' >> "$O/bench.txt"; }
SB=12,14,16,18,20,22,24,26,28,32,48,64
for r in 1 2; do
  for m in qwen3-next kimi-linear; do
    for l in M P Q R; do bn $l "$l/$m/rw16/pdl1" --model $m --batch $SB --cuda-stream 16 --cuda-pdl 1; done
    bn M "M/$m/rw16/pdl0" --model $m --batch $SB --cuda-stream 16 --cuda-pdl 0
    bn M "M/$m/rw0/rules" --model $m --batch $SB --cuda-stream 0
    bn M "M/$m/rules" --model $m --batch 1,2,4,8,16,24,32,64,96,128,192,256,512
  done
  el "round $r"
done
