#!/usr/bin/env bash
# Call 6: the L2 prefetch's lost lines (call 5: with prefetch, random slots read 9.7% more DRAM
# than the model, seq 2.8%). Variants of a3e06eb's library, built here: "half", the prefetch half
# as far ahead (sm_count / 2 CTAs); "last", the checkpoint's prefetch with an L2 evict_last
# policy (createpolicy.fractional 1.0). Two rounds, GDN f32, seq and random; then each variant's
# DRAM bytes over 16 packed steps at B = 512, random. Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
tar xJf .gpu/libs.txz -C /tmp; tar xJf .gpu/var.txz -C /tmp
mkdir -p /tmp/V/base; cp -a /tmp/X/libreplayssm.so.0.4* /tmp/V/base/
N=/tmp/X/replayssm
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --model qwen3-next --min-time 0.05 --repeat 3"
for round in 1 2; do for v in base half last; do for so in seq random; do
  LD_LIBRARY_PATH=/tmp/V/$v $N bench $C --slot-order $so --batch 16,32,64,128,512 2>&1 | awk -v v=$v -v so=$so -v r=$round '/staggered/{printf "r%s %-5s %-6s B=%-4s pk %8s rp %8s\n", r, v, so, $1, $5, $6}'
done; done; done | tee "$O/variants.txt"
el bench
for v in base half last; do
  LD_LIBRARY_PATH=/tmp/V/$v timeout 100 ncu --graph-profiling graph --launch-skip 16 --launch-count 4 --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
    $N bench $C --slot-order random --batch 512 --min-time 0.01 --repeat 1 > "$O/ncu-$v.txt" 2>&1
  echo "$v random: $(grep -E "dram__|gpu__time" "$O/ncu-$v.txt" | awk '{printf "%s%s ", $NF, ($1 ~ /time/ ? $2 " |" : "")}')"
done
el ncu
