#!/usr/bin/env bash
# Call S: which launch shape lets packed decode of an f32 state move its bytes at FLA's rate.
# FLA's V-first GDN kernel (1-warp CTAs of 8 rows, 4 KiB; 32-bit lane loads; 32 warps per SM)
# takes 512.9 us at B = 512, our packed decode 526.6 with consecutive slots and 541.3 with random
# ones, bench_latency_floor's copy in packed's shape 531.7. First the copy over launch shapes
# (bench_copy_shapes), then packed decode streamed by rows with 1, 2 or 4 warps per CTA
# (RSSM_STREAM_WARPS, branch wip/stream-warp) with and without the L2 prefetch half a wave ahead
# (RSSM_STREAM_PF), against the per-head kernel: bits first (test_cuda_stream), then two rounds of
# timings; and the same kernels without the evict-first hint on the state's loads and stores (S2,
# built with RSSM_EXP_PLAIN_STATE), as FLA's kernel has none. Runs from main or the branch. Carry
# [".gps"]: S/ (library, CLI, test_cuda_stream, bench_copy_shapes) and S2/ (library) built from the
# branch: tar cJf .gps/ps.txz -C DIR S S2.
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" > "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gps/ps.txz -C /tmp/v
V=/tmp/v/S
timeout 240 "$V/bench_copy_shapes" 8 16 64 512 > "$O/copy-shapes.txt" 2>&1; el shapes
for t in "S 1" "S 2" "S 4" "S2 1"; do
  set -- $t
  RSSM_STREAM_WARPS=$2 RSSM_STREAM_PF=1 LD_LIBRARY_PATH=/tmp/v/$1 timeout 100 "$V/test_cuda_stream" 2>&1 |
    grep -E "^FAIL|passed" | sed "s/^/$1, warps $2: /"
done | tee "$O/checks.txt"; el test
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --min-time 0.05 --repeat 3"
# library (S, S2), tag, warps per CTA, prefetch, rows per warp (0: the per-head kernel), model tag,
# bench flags
bn() { local lib=$1 tag=$2 nw=$3 pf=$4 rw=$5 m=$6; shift 6
  RSSM_STREAM_WARPS=$nw RSSM_STREAM_PF=$pf LD_LIBRARY_PATH=/tmp/v/$lib "$V/replayssm" bench $C --cuda-stream "$rw" "$@" |
    awk -v t="$lib/$tag/$m" '/staggered/{printf "%-22s %s\n", t, $0; fflush()}' >> "$O/bench.txt"; }
CFGS=("S ph 4 0 0" "S w1r8 1 0 8" "S w1r8pf 1 1 8" "S w1r16pf 1 1 16" "S w2r8pf 2 1 8" "S w4r16pf 4 1 16"
      "S2 ph 4 0 0" "S2 w1r8pf 1 1 8")
for r in 1 2; do
  for cfg in "${CFGS[@]}"; do
    bn $cfg gdn --slot-order random --model qwen3-next --batch 8,16,64,512
    case "$cfg" in "S ph"*|"S w1r8pf"*|"S w4r16pf"*|"S2 ph"*)
      [ "$r" = 1 ] && bn $cfg kda --slot-order random --model kimi-linear --batch 8,16,64,512;; esac
  done; el "round $r"
done
# consecutive slots, as FLA's GDN states are
for cfg in "S ph 4 0 0" "S w1r8pf 1 1 8" "S2 ph 4 0 0"; do
  bn $cfg gdn-seq --slot-order seq --model qwen3-next --batch 8,16,64,512
done; el seq
# a bf16 state at B = 8-32, where FlashInfer's bf16-state decode leads (the rule streams from B = 31 with 4 warps)
for cfg in "S ph 4 0 0" "S w1r16pf 1 1 16" "S w1r8pf 1 1 8" "S w4r16pf 4 1 16"; do
  bn $cfg gdn-bf16 --state bf16 --slot-order random --model qwen3-next --batch 8,16,32
done; el bf16
