#!/usr/bin/env bash
# Call W: where packed decode with a bf16 state spends its time at the batches FlashInfer leads
# (GDN B = 16 13.72 against 12.18 µs, B = 32 22.85 against 21.91): ncu of the rules' kernel at B = 16
# (per-head) and 32 (streamed), and of the other kernel at each (forced), with call Q's metrics.
# Carry [".gpv"] (call V's package; E = 5506dca).
set -uo pipefail
O=/tmp/resW; rm -rf "$O"; mkdir -p "$O"
rm -rf /tmp/v && mkdir -p /tmp/v && tar xJf .gpv/pv.txz -C /tmp/v
V=/tmp/v/E
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes.sum,lts__t_bytes.sum
M=$M,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active
M=$M,launch__grid_size,launch__block_size,launch__occupancy_limit_registers
for s in long_scoreboard barrier lg_throttle drain wait short_scoreboard no_instruction membar; do
  M=$M,smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio
done
B="bench --device cuda --model qwen3-next --state bf16 --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.01 --repeat 1"
for c in "16 -1 rule" "16 16 stream" "32 -1 rule" "32 0 perhead"; do
  set -- $c
  LD_LIBRARY_PATH=$V timeout 100 ncu --clock-control none --metrics $M -k regex:"decode_k128_kernel|stream_kernel" \
    --launch-count 1 "$V/replayssm" $B --batch "$1" --cuda-stream "$2" > "$O/ncu-b$1-$3.txt" 2>&1
  echo "B = $1 $3: rc $?"
done
