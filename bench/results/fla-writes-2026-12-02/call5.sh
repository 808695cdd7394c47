#!/usr/bin/env bash
# Call 5: call 4's ncu again on the graphs that hold 16 packed steps (launches 17-22: call 4's
# --launch-count 12 had taken the single-kernel graphs before them), prefetch off and at its
# rule's distance. Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
tar xJf .gpu/libs.txz -C /tmp
export LD_LIBRARY_PATH=/tmp/X
N=/tmp/X/replayssm
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --model qwen3-next --batch 512"
for so in seq random; do for pf in 0 1; do
  timeout 100 ncu --graph-profiling graph --launch-skip 16 --launch-count 6 --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
    $N bench $C --slot-order $so --cuda-prefetch $pf --min-time 0.01 --repeat 1 > "$O/ncu-$so-pf$pf.txt" 2>&1
  echo "$so prefetch $pf: $(grep -E "dram__|gpu__time" "$O/ncu-$so-pf$pf.txt" | awk '{printf "%s%s ", $NF, ($1 ~ /time/ ? $2 "\n   " : "")}')"
done; done
