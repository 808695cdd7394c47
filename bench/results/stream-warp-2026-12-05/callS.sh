#!/usr/bin/env bash
# Call S: which launch shape lets packed decode of an f32 state move its bytes at FLA's rate.
# FLA's V-first GDN kernel (1-warp CTAs of 8 rows, 4 KiB; 32-bit lane loads; 32 warps per SM)
# takes 512.9 us at B = 512, our packed decode 526.6 with consecutive slots and 541.3 with random
# ones, bench_latency_floor's copy in packed's shape 531.7. First the copy over launch shapes
# (bench_copy_shapes), then packed decode streamed by rows with 1, 2 or 4 warps per CTA
# (RSSM_STREAM_WARPS, branch wip/stream-warp) with and without the L2 prefetch half a wave ahead
# (RSSM_STREAM_PF), against the per-head kernel: bits first (test_cuda_stream), then two rounds of
# timings. Runs from main or the branch. Carry [".gps"]: S/ (library, CLI, test_cuda_stream,
# bench_copy_shapes) built from the branch: tar cJf .gps/ps.txz -C DIR S.
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" > "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gps/ps.txz -C /tmp/v
V=/tmp/v/S
timeout 240 "$V/bench_copy_shapes" 8 16 64 512 > "$O/copy-shapes.txt" 2>&1; el shapes
for nw in 1 2 4; do
  RSSM_STREAM_WARPS=$nw RSSM_STREAM_PF=1 LD_LIBRARY_PATH=$V timeout 100 "$V/test_cuda_stream" 2>&1 | grep -E "^FAIL|passed" | sed "s/^/warps $nw: /"
done | tee "$O/checks.txt"; el test
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --min-time 0.05 --repeat 3"
bn() { local tag=$1 nw=$2 pf=$3; shift 3
  RSSM_STREAM_WARPS=$nw RSSM_STREAM_PF=$pf LD_LIBRARY_PATH=$V "$V/replayssm" bench $C "$@" |
    awk -v t="$tag" '/staggered/{printf "%-18s %s\n", t, $0; fflush()}' >> "$O/bench.txt"; }
# tag, warps per CTA, prefetch, rows per warp (0: the per-head kernel)
CFGS=("ph 4 0 0" "w1r8 1 0 8" "w1r8pf 1 1 8" "w1r16pf 1 1 16" "w2r8pf 2 1 8" "w4r16pf 4 1 16")
for r in 1 2; do
  for cfg in "${CFGS[@]}"; do
    set -- $cfg
    bn "$1/gdn" "$2" "$3" --cuda-stream "$4" --slot-order random --model qwen3-next --batch 8,16,64,512
    [ "$r" = 1 ] && bn "$1/kda" "$2" "$3" --cuda-stream "$4" --slot-order random --model kimi-linear --batch 8,16,64,512
  done; el "round $r"
done
# consecutive slots, as FLA's GDN states are
for cfg in "ph 4 0 0" "w1r8pf 1 1 8" "w1r8 1 0 8"; do
  set -- $cfg
  bn "$1/gdn-seq" "$2" "$3" --cuda-stream "$4" --slot-order seq --model qwen3-next --batch 8,16,64,512
done; el seq
