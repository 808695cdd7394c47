#!/usr/bin/env bash
# Call 4: packed decode's extra DRAM reads (call 3: 17.81 GB seq / 19.00 GB random per 16 steps at
# B = 512 against the model's 17.18): the graphs' DRAM bytes with the L2 prefetch off and at 2
# waves' distance; their times. Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
tar xJf .gpu/libs.txz -C /tmp
export LD_LIBRARY_PATH=/tmp/X
N=/tmp/X/replayssm
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --model qwen3-next --batch 512"
for so in seq random; do for pf in 0 1 2; do
  $N bench $C --min-time 0.05 --repeat 3 --slot-order $so --cuda-prefetch $pf 2>&1 | awk -v so=$so -v pf=$pf '/staggered/{printf "%-6s prefetch %s B=%-4s pk %8s rp %8s\n", so, pf, $1, $5, $6}'
done; done | tee "$O/prefetch.txt"
el bench
for so in seq random; do for pf in 0 2; do
  timeout 100 ncu --graph-profiling graph --launch-count 12 --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
    $N bench $C --slot-order $so --cuda-prefetch $pf --min-time 0.01 --repeat 1 > "$O/ncu-$so-pf$pf.txt" 2>&1
  echo "$so prefetch $pf: $(grep -E "dram__|gpu__time" "$O/ncu-$so-pf$pf.txt" | awk '{printf "%s%s ", $NF, ($1 ~ /time/ ? $2 "\n   " : "")}')"
done; done
el ncu
