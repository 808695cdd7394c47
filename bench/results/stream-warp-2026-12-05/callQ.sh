#!/usr/bin/env bash
# Call Q: 1-warp streaming with a warp's 8 rows all in flight at once. In call S's streaming kernel
# a warp loaded its second chunk of 4 rows only after the token's preparation, so a warp of 8 rows
# had 2 KiB in flight where the per-head kernel and FLA have 4 KiB. S3 (branch wip/stream-warp
# 4660a2b) issues both chunks first when RSSM_STREAM_EARLY=1 (the same bits: test_cuda_stream).
# Timings (GDN two rounds, KDA one) against the per-head kernel in the same run, then ncu of the
# per-head kernel and of early 1-warp streaming at GDN B = 512. Carry [".gpq"]: S/ (call S's
# library, CLI, tests) and S3/ (library): tar cJf .gpq/pq.txz -C DIR S S3.
set -uo pipefail
O=/tmp/resQ; rm -rf "$O"; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/resQ.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" > "$O/info.txt"
rm -rf /tmp/v && mkdir -p /tmp/v && tar xJf .gpq/pq.txz -C /tmp/v
V=/tmp/v/S
for e in 0 1; do
  RSSM_STREAM_EARLY=$e RSSM_STREAM_WARPS=1 LD_LIBRARY_PATH=/tmp/v/S3 timeout 100 "$V/test_cuda_stream" 2>&1 |
    grep -E "^FAIL|passed" | sed "s/^/S3, 1 warp, early $e: /"
done | tee "$O/checks.txt"; el test
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --min-time 0.05 --repeat 3"
# library, tag, warps per CTA, prefetch, early, rows per warp (0: the per-head kernel), model tag, bench flags
bn() { local lib=$1 tag=$2 nw=$3 pf=$4 e=$5 rw=$6 m=$7; shift 7
  RSSM_STREAM_WARPS=$nw RSSM_STREAM_PF=$pf RSSM_STREAM_EARLY=$e LD_LIBRARY_PATH=/tmp/v/$lib "$V/replayssm" bench $C \
    --cuda-stream "$rw" "$@" | awk -v t="$lib/$tag/$m" '/staggered/{printf "%-22s %s\n", t, $0; fflush()}' >> "$O/bench.txt"; }
CFGS=("S ph 4 0 0 0" "S3 w1r8e 1 0 1 8" "S3 w1r8epf 1 1 1 8" "S3 w2r8e 2 0 1 8" "S3 w1r16e 1 0 1 16")
for r in 1 2; do
  for cfg in "${CFGS[@]}"; do
    bn $cfg gdn --slot-order random --model qwen3-next --batch 8,16,64,512
    case "$cfg" in "S ph"*|"S3 w1r8e "*|"S3 w1r8epf"*)
      [ "$r" = 1 ] && bn $cfg kda --slot-order random --model kimi-linear --batch 8,16,64,512;; esac
  done; el "round $r"
done
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,smsp__inst_executed.sum
M=$M,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active
for s in long_scoreboard barrier lg_throttle drain wait short_scoreboard no_instruction; do
  M=$M,smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio
done
B="bench --device cuda --model qwen3-next --batch 512 --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.01 --repeat 1"
for c in "S ph 4 0 0 0 -1" "S ph-nopf 4 0 0 0 0" "S3 w1r8e 1 0 1 8 -1"; do
  set -- $c
  RSSM_STREAM_WARPS=$3 RSSM_STREAM_PF=$4 RSSM_STREAM_EARLY=$5 LD_LIBRARY_PATH=/tmp/v/$1 timeout 100 ncu --clock-control none \
    --metrics $M -k regex:"decode_k128_kernel|stream_kernel" --launch-count 1 "$V/replayssm" $B --cuda-stream "$6" \
    --cuda-prefetch "$7" > "$O/ncu-$2.txt" 2>&1
  el "ncu $2"
done
