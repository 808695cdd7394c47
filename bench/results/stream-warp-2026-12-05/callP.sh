#!/usr/bin/env bash
# Call P: where the 1-warp shape's copy rate goes once the arithmetic is in (call S: the copy in
# 1-warp CTAs 523.1 µs at GDN B = 512 with random slots, packed decode streamed in that shape
# 548.8, the per-head kernel 540.1 with its prefetch). ncu (clocks as they run) on GDN B = 512:
# the copy shapes (each launch configuration once), the per-head kernel with and without its L2
# prefetch, and the 1-warp streaming kernel with and without it. Carry [".gps"] (call S's package).
set -uo pipefail
O=/tmp/resP; rm -rf "$O"; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/resP.tgz" -C "$O" .; }
mkdir -p /tmp/v && tar xJf .gps/ps.txz -C /tmp/v
V=/tmp/v/S
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum
M=$M,lts__t_bytes.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
M=$M,smsp__issue_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__grid_size,launch__block_size
for s in long_scoreboard barrier lg_throttle drain wait short_scoreboard membar no_instruction; do
  M=$M,smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio
done
N="ncu --clock-control none --metrics $M --filter-mode per-launch-config"
timeout 200 $N -k regex:copy_shape "$V/bench_copy_shapes" 512 > "$O/ncu-copy.txt" 2>&1; el copy
B="bench --device cuda --model qwen3-next --batch 512 --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.01 --repeat 1"
# tag, warps, stream prefetch, rows per warp (0: per-head), --cuda-prefetch
for c in "ph 4 0 0 -1" "ph-nopf 4 0 0 0" "w1r8 1 0 8 -1" "w1r8pf 1 1 8 -1"; do
  set -- $c
  RSSM_STREAM_WARPS=$2 RSSM_STREAM_PF=$3 LD_LIBRARY_PATH=$V timeout 150 $N -k regex:"decode_k128_kernel|stream_kernel" \
    --launch-count 1 "$V/replayssm" $B --cuda-stream "$4" --cuda-prefetch "$5" > "$O/ncu-$1.txt" 2>&1
  el "$1"
done
