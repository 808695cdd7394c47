#!/usr/bin/env bash
# The small-batch limit at 10-16 rows under the new launch rules (bench-step), and ncu of GDN replay at B = 12 / 16.
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
export LD_LIBRARY_PATH=$PWD/build-carry; N=build-carry/replayssm
for m in qwen3-next kimi-linear; do
  for b in 10 12 14 16; do
    r=$($N bench-step --device cuda --model $m --layers 36 --batch $b 2>&1)
    echo "$r" >> "$O/bench-step.txt"
    echo "$m B=$b: $(echo "$r" | awk '/packed step \(N layers\)/{p=$5} /whole replay step/{r=$4} /every row folded/{f=$6} END{printf "packed %s replay %s folded %s", p, r, f}')"
  done
done | tee "$O/step.txt"
el step
for b in 12 16; do
  ncu --kernel-name-base demangled -k "regex:decode_k128_kernel<\(bool\)0, \(bool\)0, \(int\)1" --launch-skip 40 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
    $N bench --device cuda --model qwen3-next --ring-len 16 --ring bf16 --io bf16 --slot-order random --batch $b --min-time 0.01 --repeat 1 > "$O/ncu-gdn-replay-b$b.txt" 2>&1
  grep -E "decode_k128|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Warp Cycles Per Issued|Registers Per|Eligible|Stall|Waves Per SM|Block Limit" "$O/ncu-gdn-replay-b$b.txt" | head -30
  el "ncu b$b"
done
