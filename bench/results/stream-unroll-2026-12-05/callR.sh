#!/usr/bin/env bash
# Call R: where the streaming kernel should issue its first two chunks early. Call Q measured the
# unrolled streaming kernel (two chunks in flight per warp) against call S's (one): faster from
# B = 128 with the first two chunks issued before the token's preparation, but at B = 32-64 the
# unrolled kernel without that was faster (another branch's library, so not a clean A/B). Here,
# one tree (wip/stream-unroll a1209bd, main + the unrolled loop): S5 as committed (early for bf16
# and for f32 up to 8 rows per warp), S6 the same with EARLY = false. Then whether the bf16
# streaming threshold (B = 31) moves down, and f32 streaming by 8 and 4 rows (early) against the
# per-head kernel. Last, call Q's S4 (wip/stream-warp c8fb201: 1-warp CTAs, unrolled, early) with
# the L2 prefetch half a wave ahead, which ncu suggested (call Q: without the prefetch the per-head
# kernel took 552.5 us at GDN B = 512, 1-warp streaming 545.6). Carry [".gpr"]: S5/
# (libreplayssm.so*, replayssm, test_cuda_stream), S6/ (libreplayssm.so*): a CUDA Release build of
# a1209bd, then of it with `constexpr bool EARLY = false;` in stream_kernel; S4/ (libreplayssm.so*)
# as in call Q; tar cJf .gpr/pr.txz -C DIR S5 S6 S4.
set -uo pipefail
O=/tmp/resR; rm -rf "$O"; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" > "$O/info.txt"
rm -rf /tmp/v && mkdir -p /tmp/v && tar xJf .gpr/pr.txz -C /tmp/v
V=/tmp/v/S5
for l in S5 S6; do
  LD_LIBRARY_PATH=/tmp/v/$l timeout 100 "$V/test_cuda_stream" 2>&1 | grep -E "^FAIL|passed" | sed "s/^/$l: /"
done | tee "$O/checks.txt"; el test
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --min-time 0.05 --repeat 3 --slot-order random"
# library, tag, rows per warp (-1: the rules, 0: the per-head kernel), bench flags
bn() { local lib=$1 tag=$2 rw=$3; shift 3
  LD_LIBRARY_PATH=/tmp/v/$lib "$V/replayssm" bench $C --cuda-stream "$rw" "$@" |
    awk -v t="$lib/$tag" '/staggered/{printf "%-14s %s\n", t, $0; fflush()}' >> "$O/bench.txt"; }
R="24,32,48,64,96,128,192,256,512"
for r in 1 2; do
  for l in S5 S6; do
    bn $l gdn-bf16 -1 --model qwen3-next --state bf16 --batch $R
    bn $l kda-bf16 -1 --model kimi-linear --state bf16 --batch $R
  done
  el "round $r"
done
L="12,16,20,24,28"
for m in qwen3-next kimi-linear; do
  bn S5 "$m-ph" 0 --model $m --state bf16 --batch $L
  bn S5 "$m-16" 16 --model $m --state bf16 --batch $L
  bn S6 "$m-16" 16 --model $m --state bf16 --batch $L
  bn S5 "$m-8" 8 --model $m --state bf16 --batch $L
done
el threshold
for m in qwen3-next kimi-linear; do
  for rw in 0 8 4; do bn S5 "$m-f32-$rw" $rw --model $m --batch 32,64,128,512; done
done
el f32
for pf in 0 1; do
  RSSM_STREAM_WARPS=1 RSSM_STREAM_PF=$pf RSSM_STREAM_EARLY=1 bn S4 "gdn-f32-w1r8e-pf$pf" 8 --model qwen3-next --batch 16,64,128,512
done
el "1-warp prefetch"
